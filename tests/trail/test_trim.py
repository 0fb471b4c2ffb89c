"""C12 at the unit level: trimming keeps spawn/process, cuts at a record
boundary, says what was dropped, never loses the final report."""

from __future__ import annotations

import orjson

from zapcli.trail import reader, records
from zapcli.trail import trim as retention


def _line(rtype, seq, **fields):
    return records.encode(records.make(rtype, seq, fields), [])


def test_trim_keeps_head_contiguous_tail_and_report(tmp_path):
    path = tmp_path / "t.jsonl"
    with open(path, "wb") as f:
        f.write(_line("spawn", 0, task="t"))
        f.write(_line("process", 1, pid=1, create_time=1.0))
        seq = 2
        while f.tell() < 6 * 1024 * 1024:
            f.write(_line("text", seq, delta="€ multibyte ✓ " * 40))
            seq += 1
        f.write(_line("report", seq, text="the answer"))
        f.write(_line("status", seq + 1, status="completed", exit_code=0))
    dropped = retention.trim(path)
    data = path.read_bytes()
    assert dropped > 0
    assert len(data) <= retention.KEEP_BYTES + 64 * 1024
    assert data.endswith(b"\n")
    recs = [orjson.loads(x) for x in data.splitlines()]  # every line parses: cut at a boundary
    assert [r["type"] for r in recs[:3]] == ["spawn", "process", "trimmed"]
    assert recs[2]["dropped_bytes"] == dropped
    body = [r["seq"] for r in recs[3:]]
    assert body == list(range(body[0], body[0] + len(body)))  # contiguous run
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # tryout: the marker took a kept seq
    assert recs[2]["seq"] == body[0] - 1
    s = reader.summarize(reader.parse(data))
    assert s.report == "the answer" and s.final.status == "completed"


def test_small_trail_is_untouched(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("spawn", 0, task="t"))
    before = path.read_bytes()
    assert retention.trim(path) == 0
    assert path.read_bytes() == before
