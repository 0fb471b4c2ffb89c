"""Who holds which task of a board: claim, done, release, a
claim given back when its holder ended, and a refused call.

Imports `zapcli.team.board` (its storage and transaction) and `zapcli.errors`.
Each is one IMMEDIATE transaction: of any number of concurrent claimers each
open task goes to exactly one, and a task is done once.

- **Who may claim it.** A claimer carries a `Fit`: the labels it serves and
  the tools it has (None: every label, every tool — the session's person). A
  labelled task goes only to a claimer that serves its label; a task that
  needs tools only to one that has them all. The next open task is the
  first that is ready (its --after tasks done) and fits; a named one that
  does not fit is refused, saying why.
- **Fencing.** A claim bumps the task's `claim` count; the count at the
  claim is the fencing number its claimer was handed. `done` and `release`
  given a fencing number that is no longer the task's current one (the
  claim was given back, and perhaps claimed again — by another, or by
  another attempt of the same holder) are refused and change nothing.
  Releasing a claim whose holder ended goes by the same number, so a newer
  claim of the task is never released.
- A quiet holder keeps its claim: nothing here releases a claim because
  time passed (`zapcli.team.holders` gives back only what an ended holder held).
"""

from __future__ import annotations

import time

from zapcli.errors import ZapcliError
from zapcli.plain import plain
from zapcli.team.board import (
    CLAIMED,
    DONE,
    OPEN,
    Claim,
    Task,
    Transaction,
    check_text,
    record_event,
    task_in,
    tasks,
    tasks_in,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3


@plain
class Fit:
    """What a claimer can take: the labels it serves and the tools it has
    (None: any), and how to name it and what it declares in a refusal."""

    labels: tuple[str, ...] | None = None
    tools: tuple[str, ...] | None = None
    who: str = "you"

    def serves(self, task: Task) -> bool:
        """True when the claimer serves `task`'s label (or it has none)."""
        return not task.label or self.labels is None or _norm(task.label) in {
            _norm(x) for x in self.labels}

    def lacks(self, task: Task) -> list[str]:
        """The tools `task` needs that the claimer does not have."""
        if self.tools is None:
            return []
        have = {_norm(x) for x in self.tools}
        return [t for t in task.needs if _norm(t) not in have]

    def why_not(self, task: Task) -> str | None:
        """Why this claimer may not take `task`, or None when it may."""
        if not self.serves(task):
            served = f"serves {', '.join(self.labels or ())}" if self.labels else "serves no label"
            return (f"{task.id} is labelled {task.label}, which {self.who} does not serve (its "
                    f"definition's board.labels {served}): it waits for a claimer whose "
                    "definition lists that label")
        missing = self.lacks(task)
        if missing:
            many = len(missing) > 1
            return (f"{task.id} needs the tool{'s' if many else ''} {', '.join(missing)}, which "
                    f"{self.who} lacks (its definition grants: {', '.join(self.tools or ()) or 'none'}"
                    f"): it waits for a claimer that has {'them' if many else 'it'}")
        return None

    def for_others(self, task: Task) -> str:
        """What makes `task` someone else's, in a few words."""
        return f"labelled {task.label}" if not self.serves(task) else (
            f"needing {', '.join(self.lacks(task))}")


EVERYONE = Fit()


def _norm(name: str) -> str:
    return name.strip().casefold()


def _ready(task: Task, by_num: dict[int, Task]) -> bool:
    return all(by_num[a].state == DONE for a in task.after if a in by_num)


def claim(session: str, holder: str, holder_name: str | None, num: int | None = None,
          fit: Fit = EVERYONE) -> Claim:
    """Claim task `num`, or the first open one that is ready and fits, for
    `holder`. Raises ZapcliError when the named task cannot be claimed (it
    does not fit, is held, done, waiting); a claim of whatever is next that
    finds nothing says why in the Claim it returns."""
    with Transaction() as conn:
        now = time.time()  # under the write lock: times follow the commit order
        everything = tasks_in(conn, session)
        by_num = {t.num: t for t in everything}
        if num is not None:
            task = by_num.get(num)
            if task is None:
                task_in(conn, session, num)  # raises: not on the board
            _claimable(task, by_num, holder, fit)  # type: ignore[arg-type]
        else:
            task = next((t for t in everything if t.state == OPEN and _ready(t, by_num)
                         and fit.why_not(t) is None), None)
            if task is None:
                return _nothing(everything, by_num, holder, fit)
        conn.execute("UPDATE board_task SET state = ?, holder = ?, holder_name = ?, claim = claim + 1, "
                     "updated = ? WHERE session = ? AND num = ? AND state = ?",
                     (CLAIMED, holder, holder_name, now, session, task.num, OPEN))  # type: ignore[union-attr]
        record_event(conn, session, task.num, "claimed", holder_name or holder, at=now)  # type: ignore[union-attr]
        return Claim(task_in(conn, session, task.num))  # type: ignore[union-attr]


def _claimable(task: Task, by_num: dict[int, Task], holder: str, fit: Fit) -> None:
    why = fit.why_not(task)
    if why is not None:
        raise ZapcliError(why, code="board_not_yours")
    if task.state == DONE:
        raise ZapcliError(f"{task.id} is already done" + (f" (by {task.done_by})" if task.done_by
                                                          else ""), code="board_done")
    if task.state == CLAIMED:
        who = "you" if task.holder == holder else (task.holder_name or task.holder)
        raise ZapcliError(f"{task.id} is already claimed by {who}", code="board_held")
    waiting = [f"t{a}" for a in task.after if a in by_num and by_num[a].state != DONE]
    if waiting:
        raise ZapcliError(f"{task.id} waits on {', '.join(waiting)} (--after): it can be claimed "
                          "once they are done", code="board_waiting")


def _nothing(everything: list[Task], by_num: dict[int, Task], holder: str, fit: Fit) -> Claim:
    if not everything:
        return Claim(None, "the board has no tasks", finished=True)
    others = [t for t in everything if t.state != DONE and fit.why_not(t) is not None]
    mine = [t for t in everything if t not in others]
    open_ = [t for t in mine if t.state == OPEN]
    held = [t for t in mine if t.state == CLAIMED]
    elsewhere = ""
    if others:
        kinds = "; ".join(sorted({fit.for_others(t) for t in others}))
        elsewhere = f"{len(others)} task(s) are for other claimers ({kinds})"
    if not open_ and not held:
        done = sum(1 for t in everything if t.state == DONE)
        if others:
            return Claim(None, f"nothing left for you: every task you can take is done; "
                         f"{elsewhere}", finished=True)
        return Claim(None, f"every task is done ({done} of {len(everything)})", finished=True)
    parts = []
    if open_:
        parts.append(f"{len(open_)} open task(s) wait on others (--after)")
    yours = [t for t in held if t.holder == holder]
    if len(held) > len(yours):
        parts.append(f"{len(held) - len(yours)} claimed by others")
    if yours:
        ids = ", ".join(t.id for t in yours[:5]) + (", …" if len(yours) > 5 else "")
        parts.append(f"{len(yours)} claimed by you ({ids})")
    if elsewhere:
        parts.append(elsewhere)
    return Claim(None, "nothing to claim now: " + ", ".join(parts), waiting=open_,
                 held=[t for t in held if t.holder != holder])


def _stale(task: Task, fence: int | None) -> None:
    """Raise when `fence` is given and is not the task's current claim."""
    if fence is None or (task.state == CLAIMED and task.claim == fence):
        return
    if fence > task.claim or fence < 1:
        raise ZapcliError(f"{task.id} was never claimed under fence {fence} (it has been claimed "
                          f"{task.claim} time(s)): give the number `claim --json` handed you",
                          code="board_stale")
    if task.state == DONE:
        now = f"it was done since (by {task.done_by or '?'})"
    elif task.state == OPEN:
        now = "it was given back and is open now"
    else:
        now = (f"it was given back and claimed again (fence {task.claim}, by "
               f"{task.holder_name or task.holder})")
    raise ZapcliError(f"{task.id}: the claim you were handed (fence {fence}) is no longer "
                      f"current — {now}; nothing was changed. Claim a task again to go on",
                      code="board_stale")


def done(session: str, num: int, holder: str, result: str, *, holder_name: str | None = None,
         fence: int | None = None) -> Task:
    """Mark `num` done with `result`, by its holder (under `fence`, when
    given). Raises ZapcliError when it is not claimed by `holder`, or not
    under that fencing number (a task is done once)."""
    check_text(result, "result")
    with Transaction() as conn:
        now = time.time()  # under the write lock: times follow the commit order
        task = task_in(conn, session, num)
        _stale(task, fence)
        if task.state == DONE:
            raise ZapcliError(f"{task.id} is already done" + (f" (by {task.done_by})" if task.done_by
                                                              else ""), code="board_done")
        if task.state != CLAIMED or task.holder != holder:
            who = f"claimed by {task.holder_name or task.holder}" if task.state == CLAIMED else "open"
            raise ZapcliError(f"{task.id} is {who}, not claimed by you: claim it first (only its "
                              "holder marks it done)", code="board_not_held")
        conn.execute("UPDATE board_task SET state = ?, result = ?, done_by = ?, updated = ? "
                     "WHERE session = ? AND num = ? AND state = ? AND holder = ? AND claim = ?",
                     (DONE, result, holder_name or holder, now, session, num, CLAIMED, holder,
                      task.claim))
        record_event(conn, session, num, "done", holder_name or holder, at=now)
        return task_in(conn, session, num)


def release(session: str, num: int, holder: str | None, *, note: str | None = None,
            who: str | None = None, fence: int | None = None) -> Task:
    """Put a claimed task back to open. `holder` None: whoever holds it (the
    session's person may release any claim); else only `holder`'s own.
    Raises ZapcliError when it is not claimed (by `holder`, under `fence`)."""
    with Transaction() as conn:
        now = time.time()  # under the write lock: times follow the commit order
        task = task_in(conn, session, num)
        _stale(task, fence)
        if task.state != CLAIMED or (holder is not None and task.holder != holder):
            state = "done" if task.state == DONE else (
                "open" if task.state == OPEN else f"claimed by {task.holder_name or task.holder}")
            raise ZapcliError(f"{task.id} is {state}, not claimed by you: nothing to release",
                              code="board_not_held")
        why = note or f"released by {who or holder or 'the session'}"
        _reopen(conn, session, task, why, who or holder, now)
        return task_in(conn, session, num)


def _reopen(conn: sqlite3.Connection, session: str, task: Task, note: str, who: str | None,
            now: float) -> None:
    conn.execute("UPDATE board_task SET state = ?, holder = NULL, holder_name = NULL, note = ?, "
                 "updated = ? WHERE session = ? AND num = ? AND claim = ?",
                 (OPEN, note, now, session, task.num, task.claim))
    record_event(conn, session, task.num, "released", who, note, at=now)


def release_ended(session: str, num: int, claim_token: int, note: str) -> bool:
    """Reopen `num` if it is still claimed under `claim_token` (its holder
    ended without `done`); False when someone else changed it first."""
    with Transaction() as conn:
        now = time.time()  # under the write lock: times follow the commit order
        row = conn.execute("SELECT state, claim FROM board_task WHERE session = ? AND num = ?",
                           (session, num)).fetchone()
        if row is None or row[0] != CLAIMED or row[1] != claim_token:
            return False
        _reopen(conn, session, task_in(conn, session, num), note, None, now)
        return True


def refused(session: str, num: int, who: str, note: str) -> None:
    """Record in task `num`'s history that a call about it was refused
    (nothing else changes); a task not on the board records nothing."""
    with Transaction() as conn:
        row = conn.execute("SELECT 1 FROM board_task WHERE session = ? AND num = ?",
                           (session, num)).fetchone()
        if row is not None:
            record_event(conn, session, num, "refused", who, note)


def held_by(session: str, holder: str) -> list[Task]:
    """The tasks `holder` holds now."""
    return [t for t in tasks(session) if t.state == CLAIMED and t.holder == holder]
