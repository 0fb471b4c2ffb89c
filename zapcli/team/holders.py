"""A claimer that ends without `done` releases its task, and a subagent
that ended is answered no more.

Imports `zapcli.team.board`, `.claims`, `zapcli.lifecycle.observe` (the
observer that finds `lost`, and its look that acts on nothing),
`zapcli.trail` (a run's own trail), `zapcli.supervisor.liveness`.
Before any board command answers — and before each try of a waiting claim —
every task held by a subagent is looked at with `observe`, exactly as
`poll` and `list` look at it: one that ended (completed or failed without
`done`, killed, timed out, its runner SIGKILLed and so found `lost` right
here) gives its task back, open again, with a note naming the holder and how
it ended. A task held by a `zapcli run` goes back once the run's trail ends
or its process is gone. Only the claim that was looked at is released (its
token): a task claimed again meanwhile stays with its new holder. A holder
that is alive keeps its claims however long it is quiet: nothing here goes
by time.

`refuse_ended`: a board or message call by a subagent that is terminal or
lost — its team MCP server, its agent CLI or a process of its work left
running after its runner died — is refused before anything is done for it.
The check is a look (nothing recorded or stopped first, so the refusal and
its note in the task's history are written before the observer ends what
is left of it); then its claims are given back as above. A subagent that
runs on another machine (`Caller.away`: a remote executor's node) is
refused every call, saying where its board is (`away_words`).
"""

from __future__ import annotations

from zapcli.errors import ZapcliError, param
from zapcli.team import board, claims
from zapcli.team.board import CLAIMED, Task

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from zapcli.team.who import Caller


def _subagent_end(sid: str, *, act: bool = True) -> str | None:
    """How subagent `sid` ended, in words, or None while it has not. `act`
    False: a look that records and stops nothing."""
    from zapcli.errors import NotFound
    from zapcli.lifecycle.observe import look, observe

    try:
        view = observe(sid) if act else look(sid)
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
        if claims.release_ended(session, task.num, task.claim, note):
            out.append(task)
    return out


def away_words(who: str, session: str, executor: str) -> str:
    """Why a subagent on another machine (`executor`) gets no board or messages."""
    return (f"{who} runs on another machine (the {executor} executor): the board and messages of "
            f"its session {session} are on the machine that spawned it, out of its reach; nothing "
            f"was done. A team works where its board is: spawn it with {param('executor')} local")


def team_away(executor: str) -> str:
    """Why a spawn of a `team: true` definition on a remote executor is refused."""
    return (f"the {executor} executor runs a subagent on another machine, out of reach of this "
            "session's board and messages, which a team: true definition works with; nothing was "
            f"created. Spawn it with {param('executor')} local")


def refuse_ended(caller: Caller, num: int | None = None) -> None:
    """Raise ZapcliError (`ended`) when `caller` is a subagent that is
    terminal or lost; a call about task `num` is noted in its history. Then
    what the ended subagent held goes back to the board. A subagent `away`
    (on another machine) is refused every call (`executor`)."""
    sid = caller.subagent
    if sid is None:
        return
    if caller.away:
        raise ZapcliError(away_words(caller.label, caller.session, caller.away), code="executor")
    how = _subagent_end(sid, act=False)
    if how is None:
        return
    note = (f"refused: {caller.label} {how}; its board and message calls are no longer "
            "answered")
    if num is not None:
        claims.refused(caller.session, num, caller.label, note)
    try:
        reap(caller.session)
    except ZapcliError:
        pass  # the refusal stands, whatever giving its claims back met
    raise ZapcliError(f"{caller.label} {how}: the board and messages of its session no longer "
                      "answer it (what it held went back to the board); nothing was done",
                      code="ended")
