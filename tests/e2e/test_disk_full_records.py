"""Records dropped while the disk is full (#24.14), on a real 1 MB tmpfs: a
`diagnostic` says how many were lost, the seqs have no silent gap, and the
subagent's elapsed time is its own (not stretched by the outage)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.conftest import sleep_marker, supervisor_pid, trail_records, wait_until

TURN = {"text": "Working on it.", "tool_calls": [{"name": "bash", "arguments": {
    "command": "sleep 0.4; head -c 6000 /dev/zero | tr '\\0' s"}}]}


@pytest.mark.timeout(120)
def test_records_lost_to_a_full_disk_are_counted_and_elapsed_does_not_drift(zap, model, small_disk):
    home = small_disk.path / "state"
    zap.env["ZAPCLI_HOME"] = str(home)
    zap.home = home
    model([{"match": "work in steps", "turns": [*[TURN] * 8, {"text": "All steps done."}]}])
    began = time.monotonic()
    sid = zap("spawn", "--approval", "full", "--", "work in steps").out.strip()
    trail = zap.trail(sid)
    wait_until(lambda: [r for r in trail_records(trail) if r["type"] == "tool_result"], 30)
    small_disk.fill()
    time.sleep(2)  # a few tool calls' records (6 KB results: more than a page) meet the full disk
    small_disk.free()
    assert zap("wait", "--timeout", "60", sid).returncode == 0, zap("replay", sid).out[-2000:]
    took = time.monotonic() - began
    recs = trail_records(trail)
    notes = [r for r in recs if r["type"] == "diagnostic" and r.get("name") == "disk_full"]
    assert notes
    lost = sum(int(n["message"].split()[0]) for n in notes)
    assert lost > 0
    seqs = [r["seq"] for r in recs]
    assert seqs == list(range(len(seqs))), seqs  # no gap: a dropped record takes no seq
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert 8 * 0.4 <= doc["elapsed_s"] <= took, (doc["elapsed_s"], took)


def test_a_lost_subagents_elapsed_ends_at_its_last_sign_of_life(zap):
    """A runner that died (a full disk left it no room for its end, or SIGKILL)
    was recorded `lost` when someone next looked, and its elapsed time grew
    until then: it ends when its files last changed."""
    sid = zap.spawn_sh(f"echo begun; sleep {sleep_marker(3601)}")
    pid = supervisor_pid(zap, sid)
    out = zap.trail(sid).with_suffix(".out")
    wait_until(lambda: out.exists() and out.stat().st_size > 0, 20)
    os.killpg(pid, signal.SIGKILL)
    killed = time.monotonic()
    time.sleep(3)  # nobody looks for a while
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert doc["status"] == "lost"
    started = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert doc["elapsed_s"] <= started["elapsed_s"]  # it no longer grows
    assert doc["elapsed_s"] < time.monotonic() - killed - 1.5, doc["elapsed_s"]
