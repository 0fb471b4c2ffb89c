"""`kill` racing a normal finish (#12.5): decided under the trail's lock the
runner ends under, it reports what really happened and signals nothing."""

from __future__ import annotations

import threading
import time

import psutil

from tests.conftest import final_status, supervisor_pid
from zapcli.cli.settings import for_observers
from zapcli.ops.kill import kill
from zapcli.trail import ending, store
from zapcli.trail.model import Outcome, Status


def test_a_finish_that_lands_first_is_reported_not_a_cancel(zap):
    sid = zap.spawn_sh("sleep 30")
    pid = supervisor_pid(zap, sid)
    path = zap.trail(sid)
    entries = []
    with store.locked(path):  # the runner ending right now holds this lock
        killer = threading.Thread(target=lambda: entries.extend(kill([sid], for_observers(), grace_s=0)))
        killer.start()
        time.sleep(0.5)  # the killer has seen it running and waits for the lock
        assert not entries
        ending.end(path, Outcome(Status.COMPLETED, 0, None), by="runner")
    killer.join(10)
    try:
        assert [e.outcome for e in entries] == ["already completed"]
        assert final_status(path) == "completed"
        assert psutil.pid_exists(pid)  # a finished subagent is not signalled
    finally:
        psutil.Process(pid).kill()
