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


def test_trim_keeps_what_replay_continue_and_totals_need(tmp_path):
    """#24.13: what says what happened is kept whole (the CLI session to
    resume, the tree, helpers, approvals); old tool results are folded before
    anything is dropped; the usage of dropped records is summed in the
    marker, so token totals stay right; seqs stay unique and in order."""
    path = tmp_path / "t.jsonl"
    keepers = [("session", {"session_id": "s-1"}), ("worktree", {"ok": True, "path": "/w"}),
               ("helper", {"pid": 5, "create_time": 1.0}), ("approval_request", {"req_id": "r1"}),
               ("approval_decision", {"req_id": "r1", "decision": "approve"})]
    with open(path, "wb") as f:
        f.write(_line("spawn", 0, task="t"))
        f.write(_line("process", 1, pid=1, create_time=1.0))
        f.write(_line("start", 2, pid=1))
        seq = 3
        for rtype, fields in keepers:
            f.write(_line(rtype, seq, **fields))
            seq += 1
        while f.tell() < 9 * 1024 * 1024:
            f.write(_line("tool_call", seq, call_id=f"c{seq}", name="read", arguments={"path": "p"}))
            f.write(_line("tool_result", seq + 1, call_id=f"c{seq}", ok=True, content="r" * 15000))
            f.write(_line("usage", seq + 2, input_tokens=100, output_tokens=3))
            seq += 3
    before = reader.summarize(reader.read(path))
    dropped = retention.trim(path)
    data = path.read_bytes()
    assert dropped > 0 and len(data) <= retention.KEEP_BYTES + 64 * 1024
    recs = [orjson.loads(x) for x in data.splitlines()]
    kinds = [r["type"] for r in recs]
    assert kinds[:8] == ["spawn", "process", "start", *(k for k, _ in keepers)]
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    results = [r for r in recs if r["type"] == "tool_result"]
    assert "bytes folded" in results[0]["content"] and results[-1]["content"] == "r" * 15000
    calls = {r["call_id"] for r in recs if r["type"] == "tool_call"}
    assert {r["call_id"] for r in results} <= calls | {results[0]["call_id"]}
    after = reader.summarize(reader.read(path))
    assert (after.input_tokens, after.output_tokens) == (before.input_tokens, before.output_tokens)
    assert after.cli_session == before.cli_session and after.worktree == before.worktree
    assert after.helpers == before.helpers and after.start == before.start
    mark = next(r for r in recs if r["type"] == "trimmed")
    assert mark["dropped_bytes"] == dropped and mark["dropped_records"] > 0


def test_a_trim_that_only_folds_marks_the_end(tmp_path):
    path = tmp_path / "t.jsonl"
    with open(path, "wb") as f:
        f.write(_line("spawn", 0, task="t"))
        for n in range(1, 400):
            f.write(_line("tool_result", n, call_id=f"c{n}", ok=True, content="r" * 15000))
    dropped = retention.trim(path)
    recs = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    assert len(recs) == 401 and recs[-1]["type"] == "trimmed" and recs[-1]["seq"] == 400
    assert recs[-1]["dropped_records"] == 0 and recs[-1]["dropped_bytes"] == dropped > 4 * 2**20
