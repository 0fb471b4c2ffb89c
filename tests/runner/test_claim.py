"""The runner's claim (`runner.main._claim`): it waits for the `process`
record its launcher appends after the fork, reading the whole trail only at
its first look; after that, only what follows the spawn record (#17.6: it
used to re-read the whole trail every 20 ms, a 1 MB task each time)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import isolate
from zapcli import ids
from zapcli.runner import main as runner
from zapcli.supervisor.launch import process_create_time
from zapcli.trail import store


def _queued(task: str) -> tuple[str, Path]:
    sid = ids.new_id()
    return sid, store.create_trail(sid, {"session": "s", "cli": "sh", "task": task, "cwd": "/",
                                         "workspace": "/"}, [])


def _landing_at(monkeypatch: pytest.MonkeyPatch, nth: int, rtype: str, fields: dict) -> list[int]:
    """Append `rtype` to the trail as the claim's `nth` cheap look begins, and
    count its whole-trail reads (`store.read_bounded`)."""
    whole = [0]
    read_bounded = store.read_bounded

    def counting(path, *a, **kw):
        whole[0] += 1
        return read_bounded(path, *a, **kw)

    class Landing(runner.Watch):
        looks = 0

        def read(self):
            Landing.looks += 1
            if Landing.looks == nth:
                store.append(self.path, rtype, fields)
            return super().read()

    monkeypatch.setattr(store, "read_bounded", counting)
    monkeypatch.setattr(runner, "Watch", Landing)
    return whole


def test_the_claim_takes_a_process_record_that_lands_while_it_waits(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    sid, _path = _queued("echo " + "x" * (1 << 20))  # a 1 MB task in the spawn record
    me = os.getpid()
    whole = _landing_at(monkeypatch, 5, "process", {"pid": me, "create_time": process_create_time(me)})
    assert runner._claim(sid) is None
    assert whole[0] == 1  # its first look; the four after it read only what follows the spawn record


def test_a_cancel_that_lands_while_it_waits_ends_the_claim(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    sid, _path = _queued("echo hi")
    whole = _landing_at(monkeypatch, 3, "status", {"status": "cancelled", "reason": "killed by the user"})
    assert runner._claim(sid) == f"{sid} already ended (cancelled)"
    assert whole[0] == 1


def test_a_damaged_trail_is_said_at_the_first_look(tmp_path, monkeypatch):
    from zapcli.errors import Damaged

    isolate(tmp_path, monkeypatch)
    sid, path = _queued("echo hi")
    path.write_bytes(b'{"v":1,"seq":1,"ts":"x","type":"process","pid":1}\n')
    with pytest.raises(Damaged):
        runner._claim(sid)
