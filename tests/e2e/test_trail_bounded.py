"""A runaway subagent's trail stays bounded while it runs (#24.13): 600 tool
calls wrote 8.5 MB that sat on disk until the exit trim. The runner's own
writer trims it as it grows past 5 MB, keeping what `replay`, token totals
and `continue` need (the conversation, folded where long)."""

from __future__ import annotations

import os
import threading

import pytest

from tests.conftest import trail_records
from zapcli.trail.records import parse_iso

TURNS, CALLS = 8, 70  # 560 tool results of ~15 KB: about 8.5 MB of trail
USAGE = {"prompt_tokens": 1000, "completion_tokens": 7}


@pytest.mark.timeout(170)
def test_the_trail_is_trimmed_while_it_grows_and_stays_usable(zap, model):
    page = "".join(f"line {n:04d} " + "x" * 70 + "\n" for n in range(180))  # ~15 KB
    (zap.cwd / "page.txt").write_text(page)
    calls = [{"name": "read", "arguments": {"path": "page.txt"}} for _ in range(CALLS)]
    srv = model([{"match": "read it many times", "turns": [
        *({"tool_calls": calls, "usage": USAGE} for _ in range(TURNS)),
        {"text": "Read it all.", "usage": USAGE}]},
        {"match": "and now", "turns": [{"text": "Still here."}]}])
    sid = zap("spawn", "--", "read it many times").out.strip()
    trail = zap.trail(sid)
    sizes: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                sizes.append(os.stat(trail).st_size)
            except OSError:
                pass
            done.wait(0.01)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        assert zap("wait", "--timeout", "150", sid).returncode == 0, zap("replay", sid).out[-3000:]
    finally:
        done.set()
        sampler.join()
    recs = trail_records(trail)
    status = next(r for r in recs if r["type"] == "status")
    marks = [r for r in recs if r["type"] == "trimmed"]
    assert marks and parse_iso(marks[0]["ts"]) < parse_iso(status["ts"])  # while it ran
    assert max(sizes) < 7 * 2**20, max(sizes)  # 5 MB plus what one batch adds
    assert sum(m["dropped_bytes"] for m in marks) > 2 * 2**20
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert recs[0]["type"] == "spawn" and any(r["type"] == "start" for r in recs)
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert doc["status"] == "completed" and doc["report"].strip() == "Read it all."
    assert (doc["input_tokens"], doc["output_tokens"]) == ((TURNS + 1) * 1000, (TURNS + 1) * 7)
    assert "trimmed" in zap("replay", sid).out
    new = zap("continue", sid, "and now").out.strip()
    assert zap("wait", "--timeout", "60", new).returncode == 0, zap("replay", new).out[-3000:]
    sent = srv.requests[-1]["messages"]  # well formed: the server refuses a broken history
    assert sent[1] == {"role": "user", "content": "read it many times"}
    assert sent[-1] == {"role": "user", "content": "and now"}
    results = [m for m in sent if m["role"] == "tool"]
    assert all("line 0000" in m["content"] for m in results[-CALLS:])  # the last turn whole
    assert any("bytes folded" in m["content"] for m in results)  # older ones folded, not gone
