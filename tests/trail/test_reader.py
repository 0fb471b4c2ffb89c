"""The tolerant reader: torn tails, corrupt middles, first terminal status wins."""

from __future__ import annotations

from zapcli.trail import reader, records


def _line(rtype, seq, **fields):
    return records.encode(records.make(rtype, seq, fields), [])


def test_torn_tail_is_skipped_and_reported():
    data = _line("spawn", 0, task="t") + _line("process", 1, pid=1) + b'{"v":1,"seq":2,"ty' + b"\0\0\0"
    trail = reader.parse(data)
    assert [r["type"] for r in trail.records] == ["spawn", "process"]
    assert trail.torn_tail.startswith(b'{"v":1')


def test_corrupt_middle_line_is_marked_and_reading_continues():
    data = _line("spawn", 0, task="t") + b"\xff\xfegarbage\n" + _line("report", 2, text="r")
    trail = reader.parse(data)
    assert [r["type"] for r in trail.records] == ["spawn", "report"]
    assert trail.entries[1][0] == "corrupt"


def test_first_terminal_status_is_final():
    data = (_line("spawn", 0, task="t") + _line("status", 3, status="cancelled", reason="kill")
            + _line("status", 4, status="completed", exit_code=0))
    s = reader.summarize(reader.parse(data))
    assert s.final["status"] == "cancelled"


def test_non_terminal_status_is_not_final():
    data = _line("spawn", 0, task="t") + _line("status", 1, status="running")
    assert reader.summarize(reader.parse(data)).final is None


def test_usage_totals_and_pending_approval():
    data = (_line("spawn", 0, task="t") + _line("usage", 1, input_tokens=10, output_tokens=3, cached_tokens=1)
            + _line("usage", 2, input_tokens=5, output_tokens=2, cached_tokens=0)
            + _line("approval_request", 3, req_id="r1", tool="bash", summary="ls")
            + _line("approval_request", 4, req_id="r2", tool="bash", summary="rm")
            + _line("approval_decision", 5, req_id="r1", decision="approve"))
    s = reader.summarize(reader.parse(data))
    assert (s.input_tokens, s.output_tokens, s.cached_tokens) == (15, 5, 1)
    assert s.pending_approval["req_id"] == "r2"


def test_trail_without_spawn_record_has_no_summary():
    assert reader.summarize(reader.parse(_line("process", 1, pid=1))) is None
