"""The task board of a session (docs/explanation/rules.md#fleets-traces-teams): tasks in `<state>/zapcli.db`
(stdlib sqlite3, WAL), so a board survives restarts and every process of the
session sees one board.

Imports `zapcli.statedb`, `zapcli.errors`, `zapcli.plain`. This module
owns the storage — the tables, one transaction, reading tasks, adding one;
`zapcli.team.claims` changes who holds them. A task is `open`, `claimed` (by
a holder) or `done` (with its result); `--after` tasks must be done before
it can be claimed; it may carry a label and name the tools it needs
(`board_need`), which decide who may claim it. Every change is one
transaction begun IMMEDIATE (the write lock first). A task's `claim` counts
its claims: the current count is the fencing number its holder was handed.
Every change is an event (`board_event`): who added, claimed, released,
finished it, why a claim was released, and a call that was refused.
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
CREATE TABLE IF NOT EXISTS board_need (
    session TEXT NOT NULL,
    num     INTEGER NOT NULL,
    tool    TEXT NOT NULL,
    PRIMARY KEY (session, num, tool)
);
"""
OPEN, CLAIMED, DONE = "open", "claimed", "done"
MAX_TEXT_BYTES = 16 * 1024  # a task's text, and a result: a board is read whole, often
MAX_TASKS = 10_000  # per session
MAX_LABEL = 64
MAX_NEEDS = 16
_COLUMNS = ("num, text, label, state, holder, holder_name, claim, result, done_by, note, "
            "added_by, created, updated")


@plain
class Task:
    """One task. `after`: the numbers of the tasks it waits for; `needs`:
    the tools a claimer must have; `claim`: how many times it was claimed
    (while claimed, the fencing number its holder was handed)."""

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
    needs: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"t{self.num}"

    @property
    def fence(self) -> int | None:
        """The fencing number of the current claim; None unless claimed."""
        return self.claim if self.state == CLAIMED else None


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


class Transaction:
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


def _task(row: tuple, after: list[int], needs: list[str]) -> Task:
    """A task from a row of `_COLUMNS`, its --after numbers and the tools it needs."""
    task = Task(*row)
    task.after = tuple(after)
    task.needs = tuple(needs)
    return task


def _map(conn: sqlite3.Connection, table: str, column: str, session: str,
         num: int | None = None) -> dict[int, list]:
    """`column` of `table` by task number (of one task when `num` is given), in order."""
    where, args = ("session = ?", (session,)) if num is None else (
        "session = ? AND num = ?", (session, num))
    out: dict[int, list] = {}
    for n, value in conn.execute(f"SELECT num, {column} FROM {table} WHERE {where} "
                                 f"ORDER BY num, rowid", args):
        out.setdefault(n, []).append(value)
    return out


def tasks_in(conn: sqlite3.Connection, session: str) -> list[Task]:
    after = _map(conn, "board_after", "after", session)
    needs = _map(conn, "board_need", "tool", session)
    rows = conn.execute(f"SELECT {_COLUMNS} FROM board_task WHERE session = ? ORDER BY num",
                        (session,))
    return [_task(row, sorted(after.get(row[0], ())), needs.get(row[0], [])) for row in rows]


def task_in(conn: sqlite3.Connection, session: str, num: int) -> Task:
    row = conn.execute(f"SELECT {_COLUMNS} FROM board_task WHERE session = ? AND num = ?",
                       (session, num)).fetchone()
    if row is None:
        raise ZapcliError(f"t{num} is not on this session's board (`zapcli board list` shows "
                          "its tasks)", code="not_found")
    after = _map(conn, "board_after", "after", session, num).get(num, [])
    return _task(row, sorted(after), _map(conn, "board_need", "tool", session, num).get(num, []))


def record_event(conn: sqlite3.Connection, session: str, num: int, what: str, who: str | None,
           note: str | None = None, at: float | None = None) -> None:
    conn.execute("INSERT INTO board_event (session, num, at, what, who, note) VALUES "
                 "(?, ?, ?, ?, ?, ?)", (session, num, at or time.time(), what, who, note))


def tasks(session: str) -> list[Task]:
    """Every task of `session`'s board, in the order they were added."""
    conn = _read()
    if conn is None:
        return []
    try:
        return tasks_in(conn, session)
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
        task = task_in(conn, session, num)
        task.events = [{"at": at, "what": what, "who": who, "note": note} for at, what, who, note
                       in conn.execute("SELECT at, what, who, note FROM board_event WHERE "
                                       "session = ? AND num = ? ORDER BY rowid", (session, num))]
        return task
    except sqlite3.Error as exc:
        raise StateError(f"the task board: {statedb.problem(exc)}") from None
    finally:
        conn.close()


def add(session: str, text: str, *, after: list[int] = (), label: str | None = None,  # type: ignore[assignment]
        by: str | None = None, needs: tuple[str, ...] = ()) -> Task:
    """Put a task on the board. Raises UsageError for an empty or too long
    text, a bad label, or an `after` task that is not on the board. `needs`
    are tool names, already checked by the caller (`zapcli.team.work`)."""
    check_text(text, "task")
    if label is not None and (not label.strip() or len(label) > MAX_LABEL or "\n" in label):
        raise UsageError(f"a label is one line of at most {MAX_LABEL} characters")
    if len(needs) > MAX_NEEDS:
        raise UsageError(f"a task needs at most {MAX_NEEDS} tools; {len(needs)} were given")
    with Transaction() as conn:
        now = time.time()  # under the write lock: times follow the commit order
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
        for tool in dict.fromkeys(needs):
            conn.execute("INSERT INTO board_need (session, num, tool) VALUES (?, ?, ?)",
                         (session, num, tool))
        record_event(conn, session, num, "added", by, at=now)
        return task_in(conn, session, num)
