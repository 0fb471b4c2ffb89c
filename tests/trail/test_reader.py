"""The tolerant reader: torn tails, corrupt middles, first terminal status wins."""

from __future__ import annotations

from zapcli.trail import reader, records
from zapcli.trail.model import Corrupt, Status


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
    assert isinstance(trail.entries[1], Corrupt)


def test_first_terminal_status_is_final():
    data = (_line("spawn", 0, task="t") + _line("status", 3, status="cancelled", reason="kill")
            + _line("status", 4, status="completed", exit_code=0))
    s = reader.summarize(reader.parse(data))
    assert s.final.status == "cancelled"


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


def test_process_start_and_final_records_read_typed_and_survive_damage():
    data = (_line("spawn", 0, task="t")
            + _line("process", 1, pid=41, create_time=5.5, mono=1.0, deadline_mono=301.0,
                    deadline="2030-01-01T00:00:00.000000Z", job_id="j1")
            + _line("start", 2, pid=41, create_time=5.5, mono=1.2, tools=["bash", 3], diagnostics=2)
            + _line("status", 3, status="failed", exit_code=2, reason="boom", mono=9.0, by="kill",
                    grace_s=1, stdout_bytes=10))
    s = reader.summarize(reader.parse(data))
    assert (s.process.pid, s.process.create_time, s.process.deadline_mono) == (41, 5.5, 301.0)
    assert s.process.raw["job_id"] == "j1"  # an executor's own fields stay in the record
    assert (s.start.tools, s.start.diagnostics, s.runner) == (("bash",), 2, s.process)
    f = s.final
    assert (f.status, f.exit_code, f.reason, f.by, f.grace_s, f.stdout_bytes) == (
        "failed", 2, "boom", "kill", 1.0, 10)
    assert f.outcome.status is Status.FAILED and not s.queued

    damaged = (_line("spawn", 0, task="t")
               + _line("process", 1, pid="41", create_time="soon", mono=True, deadline_mono=[1])
               + _line("start", 2, pid=-3, tools="bash", diagnostics="many", definition=[])
               + _line("status", 3, status=["completed"])  # unhashable: no status, no crash
               + _line("status", 4, status="lost", exit_code="1", reason=5, mono="x", ts=7))
    s = reader.summarize(reader.parse(data=damaged))
    assert (s.process.pid, s.process.create_time, s.process.mono, s.process.deadline_mono) == (
        None, None, None, None)
    assert (s.start.pid, s.start.tools, s.start.diagnostics, s.start.definition) == (None, (), 0, None)
    assert (s.final.status, s.final.exit_code, s.final.reason, s.final.mono, s.final.ts) == (
        "lost", None, None, None, None)


def test_a_queued_trail_has_no_runner():
    s = reader.summarize(reader.parse(_line("spawn", 0, task="t") + _line("steer", 1, text="x")))
    assert s.queued and s.runner is None and s.final is None


def test_spawn_of_reads_the_first_line_alone(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("spawn", 0, task="t", output_schema={"type": "object"})
                     + b"\x00" * 100_000)  # whatever follows is not read
    assert reader.spawn_of(path).output_schema == {"type": "object"}
    path.write_bytes(_line("process", 1, pid=1) + _line("spawn", 2, task="t"))
    assert reader.spawn_of(path) is None
    path.write_bytes(b"")
    assert reader.spawn_of(path) is None
