"""The token ledger (SPEC §9) in `<state>/zapcli.db` (stdlib sqlite3, WAL).

Imports `zapcli.paths`, `zapcli.statedb`. A subagent's own `usage` records are its ledger; when
a parent collects a terminal subagent its totals are settled into the parent
run's ledger exactly once — the primary key on the subagent id makes a second
settlement a no-op. The parent run is the subagent's session (`zapcli run`
sets ZAPCLI_SESSION to its own run id for everything it starts).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from zapcli import statedb
from zapcli.errors import StateError

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
CREATE TABLE IF NOT EXISTS ledger_budget (
    run_id        TEXT PRIMARY KEY,
    max_tokens    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_run (
    run_id        TEXT PRIMARY KEY,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    updated_at    REAL NOT NULL
);
"""


@contextmanager
def _db() -> Iterator[sqlite3.Connection]:
    """A connection for one operation, closed after it. Raises StateError (not a
    raw sqlite3 error) when the database cannot be used, e.g. a full disk."""
    try:
        conn = connect()
        try:
            yield conn
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StateError(f"the token ledger: {statedb.problem(exc)}") from None


def connect() -> sqlite3.Connection:
    """Open the database (created 0600 in a 0700 folder), WAL mode, schema ensured."""
    conn = statedb.connect(SCHEMA, timeout=30, isolation_level=None)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(ledger_settlement)")}
    if "cost_usd" not in columns:  # added for agent CLIs that report a cost (SPEC §13)
        conn.execute("ALTER TABLE ledger_settlement ADD COLUMN cost_usd REAL")
    return conn


@dataclass(frozen=True)
class Tokens:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None  # where the backend reports a cost

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


def settle(subagent_id: str, parent: str, status: str, tokens: Tokens) -> bool:
    """Settle a terminal subagent into `parent` once. True if settled now,
    False if it had been settled before (a no-op)."""
    with _db() as conn:
        cur = conn.execute(
            "INSERT OR IGNORE INTO ledger_settlement (subagent_id, parent, status, input_tokens, "
            "output_tokens, cached_tokens, settled_at, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (subagent_id, parent, status, tokens.input_tokens, tokens.output_tokens,
             tokens.cached_tokens, time.time(), tokens.cost_usd))
        return cur.rowcount == 1


def add_run_usage(run_id: str, tokens: Tokens) -> None:
    """Add a foreground run's own model usage to its ledger row."""
    with _db() as conn:
        conn.execute(
            "INSERT INTO ledger_run VALUES (?, ?, ?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET "
            "input_tokens = input_tokens + excluded.input_tokens, "
            "output_tokens = output_tokens + excluded.output_tokens, "
            "cached_tokens = cached_tokens + excluded.cached_tokens, updated_at = excluded.updated_at",
            (run_id, tokens.input_tokens, tokens.output_tokens, tokens.cached_tokens, time.time()))


def set_budget(run_id: str, max_tokens: int) -> None:
    """Record a run's tree budget (`zapcli run --max-tokens`), for `usage`."""
    with _db() as conn:
        conn.execute("INSERT OR REPLACE INTO ledger_budget VALUES (?, ?)", (run_id, max_tokens))


@dataclass
class ParentTotals:
    parent: str
    own: Tokens
    subagents: list[tuple[str, str, Tokens]]  # (id, status, tokens)
    budget: int | None = None  # the run's tree budget, input + output tokens
    running: Tokens = Tokens()  # subagents not finished yet (not settled), as their trails say

    @property
    def tree_total(self) -> int:
        """Input + output tokens of the run and every subagent it started."""
        return self.total.total + self.running.total

    @property
    def total(self) -> Tokens:
        sub = [t for _, _, t in self.subagents]
        costs = [t.cost_usd for t in sub if t.cost_usd is not None]
        return Tokens(self.own.input_tokens + sum(t.input_tokens for t in sub),
                      self.own.output_tokens + sum(t.output_tokens for t in sub),
                      self.own.cached_tokens + sum(t.cached_tokens for t in sub),
                      sum(costs) if costs else None)


def totals(parent: str | None = None) -> list[ParentTotals]:
    """Ledger rows per parent (all parents when `parent` is None)."""
    with _db() as conn:
        where, args = ("WHERE parent = ?", (parent,)) if parent else ("", ())
        rows = conn.execute(
            f"SELECT parent, subagent_id, status, input_tokens, output_tokens, cached_tokens, "
            f"cost_usd FROM ledger_settlement {where} ORDER BY settled_at", args).fetchall()
        run_where, run_args = ("WHERE run_id = ?", (parent,)) if parent else ("", ())
        runs = {r[0]: Tokens(*r[1:]) for r in conn.execute(
            f"SELECT run_id, input_tokens, output_tokens, cached_tokens FROM ledger_run {run_where}", run_args)}
        budgets = dict(conn.execute(f"SELECT run_id, max_tokens FROM ledger_budget {run_where}",
                                    run_args).fetchall())
    out: dict[str, ParentTotals] = {}
    for p, sid, status, i, o, c, cost in rows:
        out.setdefault(p, ParentTotals(p, runs.get(p, Tokens()), [])).subagents.append(
            (sid, status, Tokens(i, o, c, cost)))
    for p, own in runs.items():
        out.setdefault(p, ParentTotals(p, own, []))
    if parent and parent not in out:
        out[parent] = ParentTotals(parent, Tokens(), [])
    for p, budget in budgets.items():
        out.setdefault(p, ParentTotals(p, Tokens(), [])).budget = budget
    return list(out.values())
