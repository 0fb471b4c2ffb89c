"""The ledger (docs/explanation/rules.md#tokens, docs/explanation/rules.md#budgets) in `<state>/zapcli.db` (stdlib sqlite3, WAL): the
one place every surface takes its figures from, and where tree budgets are
kept.

Imports `zapcli.statedb`, `zapcli.errors`. A subagent's own `usage` records
are its figures; settling copies them here (`settle`, an upsert keyed by the
subagent id: settling again replaces the row with the trail's totals, so a
model call recorded after the subagent's end is counted, never twice). A
`zapcli run`'s own calls go to `ledger_run` as they happen.

Tree budgets are stored here (`ledger_tree`, `ledger_allotment`); what a
child is allotted, and when a tree may start no more, is the budget room's
policy (`zapcli.budget.allot`). A settled child's allotment is returned
here, in the settlement's transaction, charged what its tree spent; `held`
is what an owner's children hold or spent.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

from zapcli import statedb
from zapcli.errors import StateError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger_settlement (
    subagent_id   TEXT PRIMARY KEY,
    parent        TEXT NOT NULL,
    status        TEXT,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    settled_at    REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_run (
    run_id        TEXT PRIMARY KEY,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    updated_at    REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_tree (
    owner         TEXT PRIMARY KEY,
    max_tokens    INTEGER,
    max_cost      REAL,
    max_subagents INTEGER,
    started       INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ledger_allotment (
    child         TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    tokens        INTEGER,
    cost          REAL,
    state         TEXT NOT NULL DEFAULT 'held',
    spent_tokens  INTEGER NOT NULL DEFAULT 0,
    spent_cost    REAL NOT NULL DEFAULT 0,
    at            REAL NOT NULL,
    batch         TEXT
);
CREATE INDEX IF NOT EXISTS ledger_allotment_owner ON ledger_allotment (owner);
"""
# columns added since the first ledger (older databases get them on open)
_ADDED = {"ledger_settlement": ("cost_usd REAL", "cache_write_tokens INTEGER NOT NULL DEFAULT 0",
                                "calls INTEGER NOT NULL DEFAULT 0", "tree_parent TEXT"),
          "ledger_run": ("cost_usd REAL", "cache_write_tokens INTEGER NOT NULL DEFAULT 0",
                         "calls INTEGER NOT NULL DEFAULT 0")}


@contextmanager
def db() -> Iterator[sqlite3.Connection]:
    """This thread's connection, for one operation (a transaction it leaves
    open is rolled back). Raises StateError (not a raw sqlite3 error) when the
    database cannot be used, e.g. a full disk; the connection is then closed
    and the next operation opens the database again."""
    try:
        conn = _kept_connection()
        try:
            yield conn
        except sqlite3.Error:
            _drop()
            raise
        finally:
            if conn.in_transaction:
                conn.rollback()
    except sqlite3.Error as exc:
        raise StateError(f"the token ledger: {statedb.problem(exc)}") from None


# Each thread keeps its connection (opening one, with its WAL switch and schema
# check, cost ~1 ms and SQLite's lock: a `zapcli run` settles every child it
# spawned). Kept with the process's pid, the database's path and the identity
# of its file: a fork, another ZAPCLI_HOME, or a file moved aside or replaced
# opens it again. One left by a forked parent is never closed in the child (a
# close could checkpoint the parent's WAL under it): it is only held.
_kept: Any = None  # threading.local, made at the first use
_inherited: list[sqlite3.Connection] = []


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _kept_connection() -> sqlite3.Connection:
    global _kept
    if _kept is None:
        import threading

        _kept = threading.local()
    path = statedb.path()
    held = getattr(_kept, "held", None)
    if held is not None:
        conn, pid, where, identity = held
        if pid == os.getpid() and where == path and identity is not None \
                and identity == _identity(path):
            return conn
        _drop()
    conn = connect()
    _kept.held = (conn, os.getpid(), path, _identity(path))
    return conn


def _drop() -> None:
    """Close this thread's kept connection (hold it, if a forked parent opened it)."""
    held = getattr(_kept, "held", None)
    if held is None:
        return
    _kept.held = None
    conn, pid = held[0], held[1]
    if pid != os.getpid():
        _inherited.append(conn)
        return
    try:
        conn.close()
    except sqlite3.Error:
        pass


def connect() -> sqlite3.Connection:
    """Open the database (created 0600 in a 0700 folder), WAL mode, schema ensured."""
    conn = statedb.connect(SCHEMA, timeout=30, isolation_level=None)
    try:
        if _missing(conn):  # added under the write lock: processes opening a new one race here
            conn.execute("BEGIN IMMEDIATE")
            for table, column in _missing(conn):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            conn.execute("COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def _missing(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """The columns added since the first ledger that this database lacks."""
    missing = []
    for table, added in _ADDED.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        missing += [(table, column) for column in added if column.split()[0] not in have]
    return missing


@dataclass(frozen=True)
class Tokens:
    """One set of figures. `input_tokens` include the cache's: `cached_tokens`
    were read from the provider's cache, `cache_write_tokens` written to it.
    `cost_usd` None: no price was known for any of these calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    cache_write_tokens: int = 0
    calls: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def cost(self) -> float:
        return self.cost_usd or 0.0

    def __add__(self, other: Tokens) -> Tokens:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Tokens(self.input_tokens + other.input_tokens,
                      self.output_tokens + other.output_tokens,
                      self.cached_tokens + other.cached_tokens,
                      round(sum(costs), 10) if costs else None,
                      self.cache_write_tokens + other.cache_write_tokens,
                      self.calls + other.calls)

    def doc(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"total_tokens": self.total}


def of(view: object) -> Tokens:
    """The figures of anything that carries them (a View, a trail Summary)."""
    return Tokens(*(getattr(view, f.name, 0) for f in fields(Tokens)))


COLUMNS = "input_tokens, output_tokens, cached_tokens, cost_usd, cache_write_tokens, calls"


def settle(subagent_id: str, session: str, status: str, tokens: Tokens, *,
           tree_parent: str | None = None) -> bool:
    """Record a terminal subagent's figures (the totals of its trail) under its
    session; a child's allotment is returned to its tree, less what it spent.
    Settling again replaces the figures (calls recorded after its end count,
    none twice). True when this call changed the ledger."""
    with db() as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(f"SELECT {COLUMNS} FROM ledger_settlement WHERE subagent_id = ?",
                               (subagent_id,)).fetchone()
            changed = row is None or Tokens(*row) != tokens
            if changed:
                conn.execute(
                    f"INSERT OR REPLACE INTO ledger_settlement (subagent_id, parent, status, "
                    f"settled_at, tree_parent, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (subagent_id, session, status, time.time(), tree_parent, tokens.input_tokens,
                     tokens.output_tokens, tokens.cached_tokens, tokens.cost_usd,
                     tokens.cache_write_tokens, tokens.calls))
            _return(conn, subagent_id)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return changed


def _return(conn: sqlite3.Connection, child: str) -> None:
    """A settled child's allotment: returned, charged what its tree spent
    (its own figures and what its own children hold or spent); then up the
    chain, for an owner that had ended before it."""
    for _ in range(64):  # a tree is never this deep; a cycle must not hang
        own = conn.execute("SELECT input_tokens + output_tokens, COALESCE(cost_usd, 0) FROM "
                           "ledger_settlement WHERE subagent_id = ?", (child,)).fetchone()
        owner = conn.execute("SELECT owner FROM ledger_allotment WHERE child = ?",
                             (child,)).fetchone()
        if own is None or owner is None:
            return
        below = held(conn, child)
        conn.execute("UPDATE ledger_allotment SET state = 'returned', spent_tokens = ?, "
                     "spent_cost = ? WHERE child = ?",
                     (own[0] + below[0], own[1] + below[1], child))
        parent = conn.execute("SELECT state FROM ledger_allotment WHERE child = ?",
                              (owner[0],)).fetchone()
        if parent is None or parent[0] != "returned":
            return
        child = owner[0]


def add_run_usage(run_id: str, tokens: Tokens) -> None:
    """Add a foreground run's own model call(s) to its row."""
    with db() as conn:
        conn.execute(
            f"INSERT INTO ledger_run (run_id, updated_at, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(run_id) DO UPDATE SET "
            "input_tokens = input_tokens + excluded.input_tokens, "
            "output_tokens = output_tokens + excluded.output_tokens, "
            "cached_tokens = cached_tokens + excluded.cached_tokens, "
            "cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, "
            "calls = calls + excluded.calls, updated_at = excluded.updated_at, "
            "cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN cost_usd "
            "ELSE COALESCE(cost_usd, 0) + excluded.cost_usd END",
            (run_id, time.time(), tokens.input_tokens, tokens.output_tokens, tokens.cached_tokens,
             tokens.cost_usd, tokens.cache_write_tokens, tokens.calls))


def run_tokens(run_id: str) -> Tokens:
    with db() as conn:
        row = conn.execute(f"SELECT {COLUMNS} FROM ledger_run WHERE run_id = ?", (run_id,)).fetchone()
    return Tokens(*row) if row else Tokens()


def held(conn: sqlite3.Connection, owner: str) -> tuple[int, float]:
    """What `owner`'s children hold (running: their allotment, or more if they
    passed it) or spent (returned): tokens, dollars."""
    row = conn.execute(
        "SELECT COALESCE(SUM(CASE state WHEN 'held' THEN MAX(COALESCE(tokens, 0), spent_tokens) "
        "ELSE spent_tokens END), 0), COALESCE(SUM(CASE state WHEN 'held' THEN "
        "MAX(COALESCE(cost, 0), spent_cost) ELSE spent_cost END), 0) "
        "FROM ledger_allotment WHERE owner = ?", (owner,)).fetchone()
    return int(row[0]), float(row[1])


def holders(owner: str) -> list[str]:
    """`owner`'s children that still hold their allotment (not yet settled)."""
    try:
        with db() as conn:
            return [c for (c,) in conn.execute("SELECT child FROM ledger_allotment WHERE "
                                               "owner = ? AND state = 'held'", (owner,))]
    except sqlite3.Error as exc:
        raise StateError(f"the token ledger: {statedb.problem(exc)}") from None
