"""`zapcli kill RUN_ID`: stop a foreground `zapcli run` from another terminal.

Imports `zapcli.trail` (the run's own trail, `zapcli.trail.runs`) and
`zapcli.supervisor.liveness`. A run is stopped as a supervisor stops a
process: SIGTERM to the process its trail's `start` record names (pid and
create time, so a reused pid is never signalled), which the run takes as
it takes Ctrl-C — no model call, tool or spawn after it, every subagent of
its tree stopped, `cancelled`, exit 143 (docs/how-to/delegate.md#how-a-run-stops);
SIGKILL after the grace period if it is still there (its subagents then end
themselves within a second: `its run … ended`).
"""

from __future__ import annotations

import os
import signal
import time

from zapcli.errors import NotFound
from zapcli.results import KillEntry
from zapcli.trail import reader, runs
from zapcli.trail.model import FinalStatus, Status

POLL_S = 0.05
TREE_SLACK_S = 2.0  # beyond its subagents' grace: its last records, its tree's end


def kill_run(run_id: str, grace_s: float, tree_grace_s: float) -> KillEntry:
    """Stop the run `run_id` (its own subagents with it); what became of it.
    It has `grace_s` plus the time it takes to stop its subagents (each
    given `tree_grace_s`) before SIGKILL."""
    if not runs.exists(run_id):
        return KillEntry(run_id, "does not exist", error=runs.not_a_subagent(run_id))
    try:
        records = reader.read(runs.path_for(run_id)).records
    except (OSError, NotFound):
        return KillEntry(run_id, "does not exist", error=runs.not_a_subagent(run_id))
    for rec in records:
        final = FinalStatus.from_record(rec)
        if final is not None:
            return KillEntry(run_id, f"already {final.status}")
    start = next((r for r in records if r.get("type") == "start"), None) or {}
    pid, created = start.get("pid"), start.get("create_time")
    from zapcli.supervisor.liveness import is_alive

    if not is_alive(pid, created):
        return KillEntry(run_id, "not cancelled", error=(
            f"{run_id} is not running: its process (pid {pid}) is gone without saying how it "
            f"ended; `zapcli replay {run_id}` shows what it did"))
    assert isinstance(pid, int)  # is_alive holds only for a recorded pid
    sent = "SIGTERM"
    try:
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)  # a run stopped (Ctrl-Z) must be able to act on TERM
    except ProcessLookupError:
        final = _final(run_id)
        return KillEntry(run_id, f"already {final.status if final is not None else 'ended'}")
    except PermissionError as exc:
        return KillEntry(run_id, "not cancelled", pid=pid, error=f"{run_id}: pid {pid}: {exc.strerror}")
    deadline = time.monotonic() + grace_s + tree_grace_s + TREE_SLACK_S
    while is_alive(pid, created) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if is_alive(pid, created):
        sent = "SIGTERM, SIGKILL"
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        return KillEntry(run_id, "killed", pid=pid, signals=sent, error=(
            f"{run_id} did not stop after SIGTERM and was killed: its "
            "subagents end themselves within a second; its trail has no end"))
    final = _final(run_id)
    if final is not None and final.status != Status.CANCELLED:  # it ended on its own as the signal came
        return KillEntry(run_id, f"already {final.status}")
    return KillEntry(run_id, "cancelled", pid=pid, signals=sent)


def _final(run_id: str) -> FinalStatus | None:
    try:
        return reader.first_terminal(runs.path_for(run_id))
    except OSError:
        return None
