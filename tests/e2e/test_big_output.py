"""Big output keeps its end (issue 28 item 5): past the 1 MB cap the first
and the last part are kept with one marker line between, so a build's final
summary line survives a 15 MB log — in `output`, in `poll`'s fold, and for a
parent reading it."""

from __future__ import annotations

import pytest

SUMMARY = "== 1234 passed, 2 skipped in 81.20s =="


@pytest.mark.timeout(120)
def test_a_builds_summary_line_survives_a_15_mb_log(zap):
    sid = zap.spawn_sh(f"seq 1 2000000; echo '{SUMMARY}'")  # 14,888,896 bytes, then the summary
    assert zap("wait", "--timeout", "100", sid).returncode == 0
    written = 14_888_896 + len(SUMMARY) + 1
    proc = zap("output", sid)
    out = proc.stdout
    assert out.endswith(f"{SUMMARY}\n".encode()), out[-200:]  # on main: the log's first 1 MB only
    assert out.startswith(b"1\n2\n3\n") and len(out) <= 1024 * 1024
    lines = out.split(b"\n")
    markers = [ln for ln in lines[:-2] if not ln.isdigit()]
    assert len(markers) == 1 and b"left out" in markers[0], markers
    numbers = [int(ln) for ln in lines[:-2] if ln.isdigit()]
    assert numbers == sorted(numbers) and numbers[-1] == 2000000  # whole lines, in order
    steps = [b - a for a, b in zip(numbers, numbers[1:], strict=False)]
    cut = steps.index(max(steps)) + 1  # where the left-out part was
    assert numbers[:cut] == list(range(1, cut + 1))  # the head, every line whole
    assert numbers[cut:] == list(range(numbers[cut], 2000001))  # the tail, every line whole
    assert f"OUTPUT TRUNCATED ({written} bytes written" in proc.err
    assert "first and last 512 KB kept" in proc.err, proc.err
    poll = zap("poll", sid).out
    assert SUMMARY in poll and "OUTPUT TRUNCATED" in poll
    doc = zap.json("poll", sid)["subagents"][0]["output"]
    assert doc["tail"].endswith(SUMMARY + "\n") and doc["truncated"]
    assert doc["written_bytes"] == written


@pytest.mark.timeout(120)
def test_a_follower_past_the_head_is_given_the_stream_not_the_rewritten_file(zap):
    go = zap.cwd / "go"
    sid = zap.spawn_sh(f"seq 1 300000; until [ -e {go} ]; do sleep 0.1; done; seq 300001 600000; "
                       "echo END")
    import subprocess
    import sys

    follower = subprocess.Popen([sys.executable, "-m", "zapcli", "output", "--follow", sid],
                                cwd=zap.cwd, env=zap.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    from tests.conftest import wait_until

    out_file = zap.trail(sid).with_suffix(".out")
    wait_until(lambda: out_file.exists() and out_file.stat().st_size >= 1024 * 1024, 60)
    import time

    time.sleep(1.0)  # the follower has read the first 1 MB
    go.touch()
    out, err = follower.communicate(timeout=90)
    assert follower.returncode == 0, err
    lines = out.split(b"\n")
    assert lines[-2:] == [b"END", b""]
    markers = [ln for ln in lines[:-2] if not ln.isdigit()]
    assert len(markers) == 1 and b"bytes of output left out here" in markers[0], markers
    at = lines.index(markers[0])
    shown = int(lines[at - 1])  # live, the follower showed the first 1 MB as it came: its last
    assert str(int(lines[at - 2]) + 1).startswith(str(shown))  # line may be the start of one
    numbers = [int(ln) for ln in lines[:at - 1] + lines[at + 1:-2]]
    assert numbers[:1000] == list(range(1, 1001)) and numbers[-1] == 600000
    assert numbers == sorted(set(numbers)), "a line shown twice or out of order"
    assert zap("output", sid).stdout.endswith(b"600000\nEND\n")
