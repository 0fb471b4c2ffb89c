"""The task board of a session (SPEC §20): tasks in `<state>/zapcli.db`
(stdlib sqlite3, WAL), so a board survives restarts and every process of the
session sees one board.

Imports `zapcli.statedb`, `zapcli.errors`, `zapcli.plain`. A task is `open`,
`claimed` (by a holder) or `done` (with its result); `--after` tasks must be
done before it can be claimed. Every change is one transaction begun
IMMEDIATE (the write lock first): of any number of concurrent claimers each
open task goes to exactly one, and a task is done once. A claim carries a
token (`claim`, counted up per claim) so that releasing a claim whose holder
ended (`holders.reap`) never releases a newer claim of the same task. Every
change is an event (`board_event`): who added, claimed, released, finished
it, and why a claim was released.
"""

from __future__ import annotations

import sqlite3
import time

from zapcli import statedb
from zapcli.errors import StateError, UsageError, ZapcliError
from zapcli.plain import field, plain

SCHEMA = """
CREATE TABLE IF NOT EXISTS board_task (
    session     TEXT NOT NULL,
    num         INTEGER NOT NULL,
    text        TEXT NOT NULL,
    label       TEXT,
    state       TEXT NOT NULL DEFAULT 'open',
    holder      TEXT,
    holder_name TEXT,
    claim       INTEGER NOT NULL DEFAULT 0,
    result      TEXT,
    done_by     TEXT,
    note        TEXT,
    added_by    TEXT,
    created     REAL NOT NULL,
    updated     REAL NOT NULL,
    PRIMARY KEY (session, num)
);
CREATE TABLE IF NOT EXISTS board_after (
    session TEXT NOT NULL,
    num     INTEGER NOT NULL,
    after   INTEGER NOT NULL,
    PRIMARY KEY (session, num, after)
);
CREATE TABLE IF NOT EXISTS board_event (
    session TEXT NOT NULL,
    num     INTEGER NOT NULL,
    at      REAL NOT NULL,
    what    TEXT NOT NULL,
    who     TEXT,
    note    TEXT
);
CREATE INDEX IF NOT EXISTS board_event_task ON board_event (session, num);
"""
OPEN, CLAIMED, DONE = "open", "claimed", "done"
MAX_TEXT_BYTES = 16 * 1024  # a task's text, and a result: a board is read whole, often
MAX_TASKS = 10_000  # per session
MAX_LABEL = 64
_COLUMNS = ("num, text, label, state, holder, holder_name, claim, result, done_by, note, "
            "added_by, created, updated")


@plain
class Task:
    """One task. `after`: the numbers of the tasks it waits for."""

    num: int
    text: str
    label: str | None
    state: str
    holder: str | None
    holder_name: str | None
    claim: int
    result: str | None
    done_by: str | None
    note: str | None
    added_by: str | None
    created: float
    updated: float
    after: tuple[int, ...] = ()
    events: list[dict] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"t{self.num}"


@plain
class Claim:
    """What a claim got: the task, or None and why nothing could be claimed
    (`finished`: every task of the board is done, or it has none)."""

    task: Task | None
    why: str = ""
    finished: bool = False
    waiting: list[Task] = field(default_factory=list)  # open tasks whose --after ones are not done
    held: list[Task] = field(default_factory=list)  # claimed by others


def task_num(value: str | int) -> int:
    """`t3`, `T3` or `3` -> 3. Raises UsageError for anything else."""
    text = str(value).strip()
    digits = text[1:] if text[:1] in ("t", "T") else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 9 or int(digits) < 1:
        raise UsageError(f"{text!r} is not a task id; task ids look like t1, t2 (`zapcli board "
                         "list` shows them)")
    return int(digits)


def check_text(text: str, what: str) -> str:
    """`text` (a task's, or a result), stripped of nothing but checked: not
    empty, at most MAX_TEXT_BYTES. Raises UsageError."""
    if not text or not text.strip():
        raise UsageError(f"the {what} is empty; give its text")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise UsageError(f"the {what} is {size:,} bytes; the limit is {MAX_TEXT_BYTES:,} (16 KB): "
                         "write the material to a file and give its path")
    return text


def _connect() -> sqlite3.Connection:
    return statedb.connect(SCHEMA, timeout=60, isolation_level=None)


class _Tx:
    """One IMMEDIATE transaction on a fresh connection, closed after it.
    A sqlite3 error is a StateError saying what to do."""

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn = _connect()
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StateError(f"the task board: {statedb.problem(exc)}") from None
        return self.conn

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            if kind is None:
                self.conn.execute("COMMIT")
            else:
                self.conn.execute("ROLLBACK")
        except sqlite3.Error as err:
            if kind is None:
                raise StateError(f"the task board: {statedb.problem(err)}") from None
        finally:
            self.conn.close()
        if isinstance(exc, sqlite3.Error):
            raise StateError(f"the task board: {statedb.problem(exc)}") from None


def _read() -> sqlite3.Connection | None:
    """A connection for reading, or None when there is no database yet."""
    if not statedb.path().exists():
        return None
    try:
        return _connect()
    except sqlite3.Error as exc:
        raise StateError(f"the task board: {statedb.problem(exc)}") from None


def _task(row: tuple, after: dict[int, list[int]] | list[int]) -> Task:
    """A task from a row of `_COLUMNS` and its --after numbers (a map by number, or its list)."""
    nums = after.get(row[0], ()) if isinstance(after, dict) else after
    task = Task(*row)
    task.after = tuple(nums)
    return task


def _after_map(conn: sqlite3.Connection, session: str) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for num, after in conn.execute("SELECT num, after FROM board_after WHERE session = ? "
                                   "ORDER BY num, after", (session,)):
        out.setdefault(num, []).append(after)
    return out


def _all(conn: sqlite3.Connection, session: str) -> list[Task]:
    after = _after_map(conn, session)
    rows = conn.execute(f"SELECT {_COLUMNS} FROM board_task WHERE session = ? ORDER BY num",
                        (session,))
    return [_task(row, after) for row in rows]


def _one(conn: sqlite3.Connection, session: str, num: int) -> Task:
    row = conn.execute(f"SELECT {_COLUMNS} FROM board_task WHERE session = ? AND num = ?",
                       (session, num)).fetchone()
    if row is None:
        raise ZapcliError(f"t{num} is not on this session's board (`zapcli board list` shows "
                          "its tasks)", code="not_found")
    after = [a for (a,) in conn.execute("SELECT after FROM board_after WHERE session = ? AND "
                                        "num = ? ORDER BY after", (session, num))]
    return _task(row, after)


def _event(conn: sqlite3.Connection, session: str, num: int, what: str, who: str | None,
           note: str | None = None, at: float | None = None) -> None:
    conn.execute("INSERT INTO board_event (session, num, at, what, who, note) VALUES "
                 "(?, ?, ?, ?, ?, ?)", (session, num, at or time.time(), what, who, note))


def tasks(session: str) -> list[Task]:
    """Every task of `session`'s board, in the order they were added."""
    conn = _read()
    if conn is None:
        return []
    try:
        return _all(conn, session)
    except sqlite3.Error as exc:
        raise StateError(f"the task board: {statedb.problem(exc)}") from None
    finally:
        conn.close()


def show(session: str, num: int) -> Task:
    """One task with its events (oldest first). Raises ZapcliError (not_found)."""
    conn = _read()
    if conn is None:
        raise ZapcliError(f"t{num} is not on this session's board (it has no tasks yet)",
                          code="not_found")
    try:
        task = _one(conn, session, num)
        task.events = [{"at": at, "what": what, "who": who, "note": note} for at, what, who, note
                       in conn.execute("SELECT at, what, who, note FROM board_event WHERE "
                                       "session = ? AND num = ? ORDER BY rowid", (session, num))]
        return task
    except sqlite3.Error as exc:
        raise StateError(f"the task board: {statedb.problem(exc)}") from None
    finally:
        conn.close()


def add(session: str, text: str, *, after: list[int] = (), label: str | None = None,  # type: ignore[assignment]
        by: str | None = None) -> Task:
    """Put a task on the board. Raises UsageError for an empty or too long
    text, a bad label, or an `after` task that is not on the board."""
    check_text(text, "task")
    if label is not None and (not label.strip() or len(label) > MAX_LABEL or "\n" in label):
        raise UsageError(f"a label is one line of at most {MAX_LABEL} characters")
    now = time.time()
    with _Tx() as conn:
        have = {n for (n,) in conn.execute("SELECT num FROM board_task WHERE session = ?", (session,))}
        missing = [f"t{a}" for a in dict.fromkeys(after) if a not in have]
        if missing:
            raise UsageError(f"--after {', '.join(missing)}: not on this session's board "
                             "(`zapcli board list` shows its tasks)")
        if len(have) >= MAX_TASKS:
            raise ZapcliError(f"this session's board holds {MAX_TASKS:,} tasks, its limit",
                              code="board_full")
        num = max(have, default=0) + 1
        conn.execute("INSERT INTO board_task (session, num, text, label, added_by, created, "
                     "updated) VALUES (?, ?, ?, ?, ?, ?, ?)", (session, num, text, label, by, now, now))
        for a in dict.fromkeys(after):
            conn.execute("INSERT INTO board_after (session, num, after) VALUES (?, ?, ?)",
                         (session, num, a))
        _event(conn, session, num, "added", by, at=now)
        return _one(conn, session, num)


def _ready(task: Task, by_num: dict[int, Task]) -> bool:
    return all(by_num[a].state == DONE for a in task.after if a in by_num)


def claim(session: str, holder: str, holder_name: str | None, num: int | None = None) -> Claim:
    """Claim task `num`, or the first open one whose --after tasks are done,
    for `holder`. Atomic: concurrent claimers never get the same task.
    Raises ZapcliError when the named task cannot be claimed (held, done,
    waiting); a claim of whatever is next that finds nothing says why in
    the Claim it returns."""
    now = time.time()
    with _Tx() as conn:
        everything = _all(conn, session)
        by_num = {t.num: t for t in everything}
        if num is not None:
            task = by_num.get(num)
            if task is None:
                _one(conn, session, num)  # raises: not on the board
            _claimable(task, by_num, holder)  # type: ignore[arg-type]
        else:
            task = next((t for t in everything if t.state == OPEN and _ready(t, by_num)), None)
            if task is None:
                return _nothing(everything, by_num, holder)
        conn.execute("UPDATE board_task SET state = ?, holder = ?, holder_name = ?, claim = claim + 1, "
                     "updated = ? WHERE session = ? AND num = ? AND state = ?",
                     (CLAIMED, holder, holder_name, now, session, task.num, OPEN))  # type: ignore[union-attr]
        _event(conn, session, task.num, "claimed", holder_name or holder, at=now)  # type: ignore[union-attr]
        return Claim(_one(conn, session, task.num))  # type: ignore[union-attr]


def _claimable(task: Task, by_num: dict[int, Task], holder: str) -> None:
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


def _nothing(everything: list[Task], by_num: dict[int, Task], holder: str) -> Claim:
    if not everything:
        return Claim(None, "the board has no tasks", finished=True)
    open_ = [t for t in everything if t.state == OPEN]
    held = [t for t in everything if t.state == CLAIMED]
    if not open_ and not held:
        return Claim(None, f"every task is done ({len(everything)} of {len(everything)})",
                     finished=True)
    parts = []
    if open_:
        parts.append(f"{len(open_)} open task(s) wait on others (--after)")
    mine = [t for t in held if t.holder == holder]
    if len(held) > len(mine):
        parts.append(f"{len(held) - len(mine)} claimed by others")
    if mine:
        ids = ", ".join(t.id for t in mine[:5]) + (", …" if len(mine) > 5 else "")
        parts.append(f"{len(mine)} claimed by you ({ids})")
    return Claim(None, "nothing to claim now: " + ", ".join(parts), waiting=open_,
                 held=[t for t in held if t.holder != holder])


def done(session: str, num: int, holder: str, result: str, *, holder_name: str | None = None) -> Task:
    """Mark `num` done with `result`, by its holder. Raises ZapcliError when
    it is not claimed by `holder` (a task is done once)."""
    check_text(result, "result")
    now = time.time()
    with _Tx() as conn:
        task = _one(conn, session, num)
        if task.state == DONE:
            raise ZapcliError(f"{task.id} is already done" + (f" (by {task.done_by})" if task.done_by
                                                              else ""), code="board_done")
        if task.state != CLAIMED or task.holder != holder:
            who = f"claimed by {task.holder_name or task.holder}" if task.state == CLAIMED else "open"
            raise ZapcliError(f"{task.id} is {who}, not claimed by you: claim it first (only its "
                              "holder marks it done)", code="board_not_held")
        conn.execute("UPDATE board_task SET state = ?, result = ?, done_by = ?, updated = ? "
                     "WHERE session = ? AND num = ? AND state = ? AND holder = ?",
                     (DONE, result, holder_name or holder, now, session, num, CLAIMED, holder))
        _event(conn, session, num, "done", holder_name or holder, at=now)
        return _one(conn, session, num)


def release(session: str, num: int, holder: str | None, *, note: str | None = None,
            who: str | None = None) -> Task:
    """Put a claimed task back to open. `holder` None: whoever holds it (the
    session's person may release any claim); else only `holder`'s own.
    Raises ZapcliError when it is not claimed (by `holder`)."""
    now = time.time()
    with _Tx() as conn:
        task = _one(conn, session, num)
        if task.state != CLAIMED or (holder is not None and task.holder != holder):
            state = "done" if task.state == DONE else (
                "open" if task.state == OPEN else f"claimed by {task.holder_name or task.holder}")
            raise ZapcliError(f"{task.id} is {state}, not claimed by you: nothing to release",
                              code="board_not_held")
        why = note or f"released by {who or holder or 'the session'}"
        _reopen(conn, session, task, why, who or holder, now)
        return _one(conn, session, num)


def _reopen(conn: sqlite3.Connection, session: str, task: Task, note: str, who: str | None,
            now: float) -> None:
    conn.execute("UPDATE board_task SET state = ?, holder = NULL, holder_name = NULL, note = ?, "
                 "updated = ? WHERE session = ? AND num = ? AND claim = ?",
                 (OPEN, note, now, session, task.num, task.claim))
    _event(conn, session, task.num, "released", who, note, at=now)


def release_ended(session: str, num: int, claim_token: int, note: str) -> bool:
    """Reopen `num` if it is still claimed under `claim_token` (its holder
    ended without `done`); False when someone else changed it first."""
    now = time.time()
    with _Tx() as conn:
        row = conn.execute("SELECT state, claim FROM board_task WHERE session = ? AND num = ?",
                           (session, num)).fetchone()
        if row is None or row[0] != CLAIMED or row[1] != claim_token:
            return False
        _reopen(conn, session, _one(conn, session, num), note, None, now)
        return True


def held_by(session: str, holder: str) -> list[Task]:
    """The tasks `holder` holds now."""
    return [t for t in tasks(session) if t.state == CLAIMED and t.holder == holder]
