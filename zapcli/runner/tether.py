"""A run's subagents never outlive it (C26), and every subagent's figures
reach the ledger when it ends (docs/explanation/rules.md#budgets).

Imports `zapcli.trail`, `zapcli.supervisor`, `zapcli.lifecycle.observe`,
`zapcli.ledger` (at exit, and only with something to settle). A subagent
spawned inside a `zapcli run` (or by one of its descendants) carries the
run's identity in its spawn record; a thread here checks every second that
the run's process is still the one recorded (pid and create time) and, once
it is gone — killed, even with SIGKILL — records `cancelled`, naming the
run, and stops the work as SIGTERM would.
"""

from __future__ import annotations

import threading

from zapcli.trail import ending, store
from zapcli.trail.model import Outcome, SpawnRecord, Status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EVERY_S = 1.0


def _run_of(spawn: SpawnRecord) -> dict[str, Any] | None:
    run = spawn.raw.get("run")
    if not isinstance(run, dict) or not isinstance(run.get("pid"), int):
        return None
    import socket  # only a subagent of a `zapcli run` has a run to check

    if run.get("host") not in (None, socket.gethostname()):
        return None  # on another machine (a cluster node): its pid says nothing here
    return run


def gone_reason(run: dict[str, Any]) -> str:
    return (f"its run {run.get('id')} ended (pid {run.get('pid')} is gone): a run's subagents "
            "never outlive it")


def hold(sid: str, spawn: SpawnRecord, terminated: threading.Event) -> None:
    """Watch the run `sid` belongs to, on a daemon thread, until it is gone."""
    run = _run_of(spawn)
    if run is None:
        return
    from zapcli.supervisor.liveness import is_alive

    def watch() -> None:
        while not terminated.wait(EVERY_S):
            if is_alive(run["pid"], run.get("create_time")):
                continue
            ending.end(store.path_for(sid), Outcome(Status.CANCELLED, None, gone_reason(run)),
                       by="run", deny_pending=gone_reason(run))
            terminated.set()
            return

    threading.Thread(target=watch, name="run-tether", daemon=True).start()


def settle_self(sid: str) -> None:
    """The runner's last act: its figures (every call in its trail, one recorded
    after its status too) into the ledger, and its allotment back to its tree."""
    try:
        from zapcli.trail.reader import load

        s = load(sid)
        parent = s.spawn.raw.get("parent")
        if not (s.calls or s.input_tokens or s.output_tokens or parent) or s.final is None:
            return
        from zapcli import ledger

        ledger.settle(sid, s.spawn.session, str(s.final.status), ledger.of(s),
                      tree_parent=parent if isinstance(parent, str) else None)
    except Exception:  # noqa: BLE001 - the ledger is also settled by whoever observes it
        pass
