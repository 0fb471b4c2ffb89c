"""The board's verbs for one caller (docs/explanation/rules.md#fleets-traces-teams): add, list, claim (waiting
if asked), done, release, show — what `zapcli board`, the built-in agent's
`board` tool and the team MCP server all call.

Imports `zapcli.team.board`, `.claims`, `.holders`, `.who`, and the names of
the grantable tools (`zapcli.tools.registry`: a task names the tools it
needs). Each verb first refuses a caller that ended (`holders.refuse_ended`:
a subagent terminal or lost gets nothing done), then gives back the tasks
whose holders ended (`holders.reap`), so what it answers is never a claim by
someone who is gone. A claim is handed only what the caller can take (its
`Fit`); `done` and `release` carry the fencing number of the claim — the one
given (`--fence`), else the one this caller was handed.
"""

from __future__ import annotations

import time

from zapcli.errors import UsageError, ZapcliError, param
from zapcli.plain import plain
from zapcli.team import board, claims, holders
from zapcli.team.board import Claim, Task
from zapcli.team.who import USER, Caller

MAX_WAIT_S = 600.0
POLL_S = 0.25
_MAY_FREE = ("board_held", "board_waiting")  # a named task a wait can still get


@plain
class Listed:
    session: str
    tasks: list[Task]


@plain
class Claimed:
    session: str
    claim: Claim
    deps: list[Task]  # the tasks it waited for, with their results


@plain
class Changed:
    session: str
    verb: str  # added, done, released
    task: Task


@plain
class Shown:
    session: str
    task: Task


def list_tasks(caller: Caller) -> Listed:
    holders.refuse_ended(caller)
    holders.reap(caller.session)
    return Listed(caller.session, board.tasks(caller.session))


def add(caller: Caller, text: str, after: list[str] | None = None,
        label: str | None = None, needs: list[str] | None = None) -> Changed:
    holders.refuse_ended(caller)
    nums = [board.task_num(a) for a in after or ()]
    tools = tool_names(needs or ())
    task = board.add(caller.session, text, after=nums, label=label or None, by=caller.label,
                     needs=tools)
    return Changed(caller.session, "added", task)


def tool_names(names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The grantable tools `names` stand for, in their own spelling (`Write`
    -> `write`), each once. Raises UsageError for any other name."""
    import difflib

    from zapcli.tools.registry import GRANTABLE, canonical_name, never_grantable_reason

    out: list[str] = []
    for name in names:
        tool = canonical_name(name)
        if tool is None:
            never = never_grantable_reason(name)
            near = difflib.get_close_matches(name.lower(), [g.lower() for g in GRANTABLE], n=1)
            hint = (f" ({never})" if never else f" (did you mean '{canonical_name(near[0])}'?)"
                    if near else "")
            raise UsageError(f"a task cannot need {name!r}{hint}: name tools a definition can "
                             f"grant — {', '.join(GRANTABLE)}")
        if tool not in out:
            out.append(tool)
    return tuple(out)


def claim(caller: Caller, task: str | None = None, wait_s: float = 0.0) -> Claimed:
    """Claim `task`, or the next one; with `wait_s`, wait that long for one
    to become claimable — on an empty board, for the first to be added."""
    until = time.monotonic() + wait_s
    if task is None and 0 < wait_s <= MAX_WAIT_S:
        _until_added(caller, until)
    got = _claim(caller, task, max(until - time.monotonic(), 0.0) if wait_s > 0 else wait_s)
    deps = dependencies(caller, got.task) if got.task is not None else []
    return Claimed(caller.session, got, deps)


def _until_added(caller: Caller, until: float) -> None:
    """Wait until the caller's board holds a task, or `until` (monotonic)
    passes: a worker started before the tasks are added waits for them."""
    while not board.tasks(caller.session) and time.monotonic() < until:
        time.sleep(min(POLL_S, max(until - time.monotonic(), 0.0)))


def _claim(caller: Caller, task: str | None, wait_s: float) -> Claim:
    """The task claimed, or why none could be. With `wait_s`, waits that
    long for one to become claimable (its --after tasks done, a holder gone),
    unless the board is finished. A named task that cannot be claimed (done,
    or still held or waiting when the wait is over) is a ZapcliError."""
    if not 0 <= wait_s <= MAX_WAIT_S:
        raise UsageError(f"{param('wait_secs')} must be between 0 and {MAX_WAIT_S:.0f}, got {wait_s:g}")
    num = board.task_num(task) if task else None
    until = time.monotonic() + wait_s
    while True:
        holders.refuse_ended(caller, num)  # it may end while it waits
        holders.reap(caller.session)
        try:
            got = claims.claim(caller.session, caller.holder, caller.label, num, caller.fit)
        except ZapcliError as exc:  # a named task: held by another, or waiting on others
            if exc.code not in _MAY_FREE or time.monotonic() >= until:
                raise
        else:
            if got.task is not None:
                caller.fences[got.task.num] = got.task.claim
            if got.task is not None or got.finished or time.monotonic() >= until:
                return got
        time.sleep(min(POLL_S, max(until - time.monotonic(), 0.0)))


def _held(caller: Caller, task: str | None, verb: str) -> int:
    """The task `verb` is about: the one named, else the one the caller holds."""
    if task:
        return board.task_num(task)
    mine = claims.held_by(caller.session, caller.holder)
    if len(mine) == 1:
        return mine[0].num
    if not mine:
        raise ZapcliError(f"you hold no task: name the task to {verb} (claim one first)",
                          code="board_not_held")
    raise UsageError(f"you hold {len(mine)} tasks ({', '.join(t.id for t in mine)}): name the "
                     f"one to {verb}")


def _named(task: str | None) -> int | None:
    return board.task_num(task) if task else None


def done(caller: Caller, task: str | None, result: str, fence: int | None = None) -> Changed:
    board.check_text(result, "result")
    holders.refuse_ended(caller, _named(task))
    num = _held(caller, task, "mark done")
    holders.reap(caller.session)
    fence = fence if fence is not None else caller.fences.get(num)
    got = claims.done(caller.session, num, caller.holder, result, holder_name=caller.label,
                      fence=fence)
    caller.fences.pop(num, None)
    return Changed(caller.session, "done", got)


def release(caller: Caller, task: str | None, fence: int | None = None) -> Changed:
    """A claim back to open: a subagent's or run's own; the session's person any."""
    holders.refuse_ended(caller, _named(task))
    num = _held(caller, task, "release")
    holders.reap(caller.session)
    mine = None if caller.holder == USER else caller.holder
    fence = fence if fence is not None else caller.fences.get(num)
    got = claims.release(caller.session, num, mine, who=caller.label, fence=fence)
    caller.fences.pop(num, None)
    return Changed(caller.session, "released", got)


def show(caller: Caller, task: str) -> Shown:
    holders.refuse_ended(caller)
    holders.reap(caller.session)
    return Shown(caller.session, board.show(caller.session, board.task_num(task)))


def dependencies(caller: Caller, task: Task) -> list[Task]:
    """The tasks `task` waited for, with their results (what a claimer reads)."""
    if not task.after:
        return []
    by_num = {t.num: t for t in board.tasks(caller.session)}
    return [by_num[a] for a in task.after if a in by_num]
