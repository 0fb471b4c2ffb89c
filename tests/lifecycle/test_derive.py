"""Status derivation (docs/explanation/rules.md#status) as a table: the pure `derive` over trail
summaries and the facts a (fake) process probe reports — alive, dead, zombie
or reused pid (both: the probe says dead), past its deadline, rebooted."""

from __future__ import annotations

import pytest

from zapcli.lifecycle.status import (
    INTERRUPTED_REASON,
    LOST_REASON,
    OVERDUE_REASON,
    Facts,
    apply,
    derive,
)
from zapcli.trail import reader, records

SPAWN_TS = "2026-11-30T10:00:00.000000Z"
SPAWN_EPOCH = records.parse_iso(SPAWN_TS)


def _trail(*recs: dict) -> reader.Summary:
    lines = [records.encode({"v": 1, "seq": i, "ts": SPAWN_TS, **r}, []) for i, r in enumerate(recs)]
    summary = reader.summarize(reader.parse(b"".join(lines)))
    assert summary is not None
    return summary


SPAWN = {"type": "spawn", "session": "s", "cli": "sh", "task": "t", "cwd": "/", "workspace": "/",
         "timeout_s": 60}
PROCESS = {"type": "process", "pid": 4242, "create_time": SPAWN_EPOCH, "mono": 100.0,
           "deadline_mono": 160.0}
DONE = {"type": "status", "status": "completed", "exit_code": 0, "mono": 130.0}
ASK = {"type": "approval_request", "req_id": "r1", "tool": "bash", "summary": "bash: ls"}


def probe(alive, *, now=120.0, boot=SPAWN_EPOCH - 3600, why=None, age=None):
    """What a fake process probe reports about the recorded runner."""
    return Facts(alive, now, boot, age, why)


ROWS = [
    # (records, facts, expected status, expected finding, why)
    ((SPAWN,), probe(None), "queued", None, "no process yet: queued, nothing to check"),
    ((SPAWN, PROCESS), probe(True), "running", None, "alive and within its deadline"),
    ((SPAWN, PROCESS, ASK), probe(True), "awaiting_approval", None, "a pending request"),
    ((SPAWN, PROCESS), probe(True, now=165.0), "running", None, "past the deadline by < 10 s"),
    ((SPAWN, PROCESS), probe(True, now=171.0), "running", ("timeout", OVERDUE_REASON),
     "past the deadline by > 10 s: the observer kills and records timeout"),
    ((SPAWN, PROCESS), probe(False), "running", ("lost", LOST_REASON),
     "dead (or a zombie, or a reused pid: the probe says dead) with no result"),
    ((SPAWN, PROCESS), probe(False, why="its Ray node died"), "running",
     ("lost", "its Ray node died"), "the executor's own word on the death"),
    ((SPAWN, PROCESS), probe(False, boot=SPAWN_EPOCH + 60), "running",
     ("interrupted", INTERRUPTED_REASON), "the machine booted after the spawn"),
    ((SPAWN, PROCESS, DONE), probe(False), "completed", None, "a terminal record is final"),
    ((SPAWN, PROCESS, DONE, {"type": "status", "status": "lost"}), probe(True), "completed",
     None, "the FIRST terminal status wins"),
    ((SPAWN, PROCESS), probe(None), "running", None, "the executor cannot tell now"),
]


@pytest.mark.parametrize("recs,facts,status,finding,why", ROWS, ids=[r[-1] for r in ROWS])
def test_derive_table(recs, facts, status, finding, why):
    view, found = derive("sa_20261130_0000abcd", _trail(*recs), facts)
    assert view.status == status, why
    assert (None if found is None else (found.status, found.reason)) == finding, why
    if finding is not None:
        after = apply(view, found, recorded=True)
        assert after.status == finding[0] and after.terminal


def test_a_damaged_spawn_timestamp_is_lost_not_a_crash():
    bad = dict(SPAWN, ts="yesterday")
    lines = [records.encode(bad, []), records.encode({"v": 1, "seq": 1, "ts": "x", **PROCESS}, [])]
    summary = reader.summarize(reader.parse(b"".join(lines)))
    view, found = derive("sa_20261130_0000abcd", summary, probe(False))
    assert found is not None and found.status == "lost"


def test_stall_is_shown_only_for_running_ones():
    view, _ = derive("sa_20261130_0000abcd", _trail(SPAWN, PROCESS), probe(True, age=300.0),
                     stall_s=120.0)
    assert view.stalled_s == 300.0
    view, _ = derive("sa_20261130_0000abcd", _trail(SPAWN), probe(None, age=300.0), stall_s=120.0)
    assert view.stalled_s is None  # queued: not stalled


def test_an_unrecorded_finding_says_so():
    view, found = derive("sa_20261130_0000abcd", _trail(SPAWN, PROCESS), probe(False))
    assert "not recorded" in apply(view, found, recorded=False).reason


def test_damaged_process_and_status_fields_derive_without_raising():
    """A damaged field takes its default (`trail.model`), so a bad trail
    affects only its own answer: no pid, no elapsed time, no exit code."""
    proc = {**PROCESS, "pid": "4242", "mono": "early", "deadline_mono": None}
    view, finding = derive("id", _trail(SPAWN, proc), probe(True))
    assert (view.status, view.pid, view.elapsed_s, finding) == ("running", None, None, None)
    end = {"type": "status", "status": "failed", "exit_code": "2", "reason": ["x"], "mono": "late"}
    view, finding = derive("id", _trail(SPAWN, proc, end), probe(False))
    assert (view.status, view.exit_code, view.reason, finding) == ("failed", None, None, None)
    assert view.elapsed_s == 0.0  # from the records' times, both SPAWN_TS
