"""A claimer that ends without `done` releases its task (SPEC §20).

Imports `zapcli.team.board`, `zapcli.lifecycle.observe` (the observer that
finds `lost`), `zapcli.trail` (a run's own trail), `zapcli.supervisor.liveness`.
Before any board command answers — and before each try of a waiting claim —
every task held by a subagent is looked at with `observe`, exactly as
`poll` and `list` look at it: one that ended (completed or failed without
`done`, killed, timed out, its runner SIGKILLed and so found `lost` right
here) gives its task back, open again, with a note naming the holder and how
it ended. A task held by a `zapcli run` goes back once the run's trail ends
or its process is gone. Only the claim that was looked at is released (its
token): a task claimed again meanwhile stays with its new holder.
"""

from __future__ import annotations

from zapcli.team import board
from zapcli.team.board import CLAIMED, Task

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _subagent_end(sid: str) -> str | None:
    """How subagent `sid` ended, in words, or None while it has not."""
    from zapcli.errors import NotFound
    from zapcli.lifecycle.observe import observe

    try:
        view = observe(sid)
    except NotFound:
        return "is gone (its files were removed)"
    if not view.terminal:
        return None
    why = (view.reason or "").strip().splitlines()
    return f"ended {view.status}" + (f" ({why[0][:160]})" if why else "")


def _run_end(run_id: str) -> str | None:
    """How `zapcli run` `run_id` ended, or None while its process runs."""
    from zapcli.errors import NotFound
    from zapcli.supervisor.liveness import is_alive
    from zapcli.trail import reader, runs

    try:
        trail = reader.read(runs.path_for(run_id))
    except (NotFound, OSError):
        return "is gone (its trail was removed)"
    start: dict[str, Any] | None = None
    for rec in trail.records:
        if rec.get("type") == "status":
            return f"ended {rec.get('status')}"
        if rec.get("type") == "start":
            start = rec
    if start is not None and "create_time" in start and not is_alive(start.get("pid"),
                                                                      start.get("create_time")):
        return "ended (its process is gone)"
    return None


def end_of(holder: str) -> str | None:
    """How the holder of a claim ended, or None while it lives (a person
    never ends)."""
    if holder.startswith("sa_"):
        return _subagent_end(holder)
    if holder.startswith("run_"):
        return _run_end(holder)
    return None


def reap(session: str, tasks: list[Task] | None = None) -> list[Task]:
    """Give back every task of `session` whose holder ended without `done`;
    the tasks released."""
    held = [t for t in (board.tasks(session) if tasks is None else tasks) if t.state == CLAIMED]
    out: list[Task] = []
    ends: dict[str, str | None] = {}
    for task in held:
        holder = task.holder or ""
        if holder not in ends:
            ends[holder] = end_of(holder)
        how = ends[holder]
        if how is None:
            continue
        note = (f"released: {task.holder_name or holder} held it and {how} without marking it "
                "done")
        if board.release_ended(session, task.num, task.claim, note):
            out.append(task)
    return out
