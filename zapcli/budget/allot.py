"""What each child may spend of its tree's budget (docs/explanation/rules.md#budgets): the tree's
limits, the allotment carved for a child as it is spawned, and what an
owner's children hold or spent — the figures every check adds to the
owner's own.

Imports `zapcli.ledger` (the tables), `zapcli.errors`. A tree
budget (`run --max-tokens/--max-cost`, or `spawn --max-tokens/--max-cost` of
a subagent whose work spawns) is recorded for its owner; each child it
starts is allotted a share carved from what is not yet reserved, in one
transaction (`reserve`), so children spawned in one model message never all
see the same free amount: together they can pass the tree's limit by no
more than one call each, each stopping itself once its allotment is spent.
A child for which nothing is free is not funded (`BudgetSpent`).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from zapcli import ledger
from zapcli.errors import UsageError, ZapcliError, param
from zapcli.money import dollars

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Budget:
    """A tree's limits: tokens (input + output), dollars, subagents started."""

    max_tokens: int | None = None
    max_cost: float | None = None
    max_subagents: int | None = None
    started: int = 0

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None


def set_budget(owner: str, budget: Budget) -> None:
    """Record the limits of the tree `owner` heads (a run, or a subagent)."""
    with ledger.db() as conn:
        conn.execute("INSERT INTO ledger_tree (owner, max_tokens, max_cost, max_subagents) "
                     "VALUES (?, ?, ?, ?) ON CONFLICT(owner) DO UPDATE SET "
                     "max_tokens = excluded.max_tokens, max_cost = excluded.max_cost, "
                     "max_subagents = excluded.max_subagents",
                     (owner, budget.max_tokens, budget.max_cost, budget.max_subagents))


def budget_of(owner: str) -> Budget | None:
    with ledger.db() as conn:
        row = conn.execute("SELECT max_tokens, max_cost, max_subagents, started FROM ledger_tree "
                           "WHERE owner = ?", (owner,)).fetchone()
    return Budget(*row) if row else None


class BudgetSpent(ZapcliError):
    """A spawn the tree's budget or its --max-subagents refuses (nothing is created)."""

    def __init__(self, message: str, code: str = "token_budget"):
        super().__init__(message, code=code)


@dataclass(frozen=True)
class Allotment:
    tokens: int | None
    cost: float | None
    free_tokens: int | None  # what was not yet reserved before this one
    free_cost: float | None


def share(free: float, siblings: int, before: int = 0) -> float:
    """The default allotment: an even share of what was not yet reserved among
    the subagents spawned together (one model message), one share kept for
    the parent itself. `before`: how many of them took theirs already (from
    the same remainder: `free` is what they left)."""
    return free / (max(siblings - before, 1) + 1)


def reserve(owner: str, child: str, own: ledger.Tokens, *, tokens: int | None = None,
            cost: float | None = None, siblings: int = 1, batch: str | None = None,
            root: str | None = None) -> Allotment | None:
    """Start `child` in `owner`'s tree, in one transaction: count it against
    `root`'s --max-subagents, and carve its allotment from `owner`'s budget
    (`own`: what the owner itself spent; `tokens`/`cost`: what the parent
    asked for, at most what is free). None when `owner` has no budget.
    Raises BudgetSpent when the tree may start no more."""
    with ledger.db() as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            out = _reserve(conn, owner, child, own, (tokens, cost), (siblings, batch), root)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return out


def _reserve(conn: sqlite3.Connection, owner: str, child: str, own: ledger.Tokens,
             want: tuple[int | None, float | None], together: tuple[int, str | None],
             root: str | None) -> Allotment | None:
    tokens, cost = want
    siblings, batch = together
    if root is not None:
        row = conn.execute("SELECT max_subagents, started FROM ledger_tree WHERE owner = ?",
                           (root,)).fetchone()
        if row is not None:
            if row[0] and row[1] >= row[0]:
                raise BudgetSpent(_capped(row[1], row[0]), code="max_subagents")
            conn.execute("UPDATE ledger_tree SET started = started + 1 WHERE owner = ?", (root,))
    row = conn.execute("SELECT max_tokens, max_cost FROM ledger_tree WHERE owner = ?",
                       (owner,)).fetchone()
    if row is None or (row[0] is None and row[1] is None):
        return None
    held_t, held_c = ledger.held(conn, owner)
    free_t = None if row[0] is None else row[0] - own.total - held_t
    # dollars to the 8 places allotments are carved in: sums of them leave float dust
    free_c = None if row[1] is None else round(row[1] - own.cost - held_c, 8)
    for free, limit, what in ((free_t, row[0], "tokens"), (free_c, row[1], "dollars")):
        if free is not None and free <= 0:
            shown = f"{limit:,}" if what == "tokens" else dollars(limit)
            raise BudgetSpent(f"the token budget of {owner} is spent or reserved ({shown} {what}: "
                              "its own calls and what its subagents hold or spent): no new "
                              "subagent starts. Wait for the running ones: what they do not use "
                              "returns when they end")
    before = conn.execute("SELECT COUNT(*) FROM ledger_allotment WHERE owner = ? AND batch = ?",
                          (owner, batch)).fetchone()[0] if batch else 0
    give_t = None if free_t is None else \
        max(int(min(tokens or share(free_t, siblings, before), free_t)), 1)
    give_c = None if free_c is None else \
        round(min(cost or share(free_c, siblings, before), free_c), 8)
    conn.execute("INSERT OR REPLACE INTO ledger_allotment (child, owner, tokens, cost, at, batch) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (child, owner, give_t, give_c, time.time(), batch))
    return Allotment(give_t, give_c, free_t, free_c)


def _capped(started: int, limit: int) -> str:
    return (f"this run has started {started} subagents, its limit (--max-subagents {limit}, "
            "config max_subagents), so it starts no more. Work with the results you have, or "
            "wait for and reuse the subagents you started")


def cap_reached(root: str) -> str | None:
    """What a spawn in `root`'s tree would be refused with when its
    --max-subagents is reached already (a look, nothing reserved: so that
    nobody is asked to approve a spawn that cannot start); else None."""
    budget = budget_of(root)
    if budget is None or not budget.max_subagents or budget.started < budget.max_subagents:
        return None
    return _capped(budget.started, budget.max_subagents)


def unreserve(child: str, root: str | None = None) -> None:
    """Undo `reserve` for a spawn that did not happen after all."""
    with ledger.db() as conn:
        conn.execute("DELETE FROM ledger_allotment WHERE child = ?", (child,))
        if root is not None:
            conn.execute("UPDATE ledger_tree SET started = MAX(started - 1, 0) WHERE owner = ?",
                         (root,))


COST_REPORTED = ("claude",)  # backends whose CLI reports each call's cost


def check_money(max_cost: float | None, cli: str, model: str | None,
                price: dict[str, float] | None) -> None:
    """A dollar budget needs every call priced: refused at spawn otherwise."""
    if max_cost is None:
        return
    if not max_cost > 0 or max_cost == float("inf"):
        raise UsageError(f"{param('max_cost')} must be a positive number of dollars, got {max_cost}")
    if cli in COST_REPORTED or cli == "sh":
        return
    from zapcli import prices

    if not prices.known(model, price):
        from zapcli.paths import config_dir

        raise UsageError(prices.unknown_message(model, str(config_dir() / "config.yaml")))


def fund(owner: str, sid: str, cli: str, model: str | None, price: dict[str, float] | None, *,
         want: tuple[int | None, float | None], owner_budget: tuple[int | None, float | None]
         | None, owner_view: Any, run_parent: bool, siblings: int, batch: str | None,
         root: str | None) -> dict[str, Any] | None:
    """Carve the allotment of `sid`, a child of `owner` (a run, or a subagent
    whose work spawns: `owner_view` is its trail, `owner_budget` its own
    limits; `run_parent`: the owner is the run whose tool spawns it), from
    what is not yet reserved: {max_tokens, max_cost}, or None when the tree
    has no budget. `want` is what the spawn asked for (at most
    what is free). Raises BudgetSpent (not funded) or UsageError."""
    own = ledger.Tokens()
    if owner_view is not None and owner_budget is not None:
        set_budget(owner, Budget(*owner_budget))
        own = ledger.of(owner_view)
    elif run_parent:
        own = ledger.run_tokens(owner)
    tree = budget_of(owner)
    max_tokens, max_cost = want
    check_money(max_cost or (tree.max_cost if tree is not None else None), cli, model, price)
    allotment = reserve(owner, sid, own, tokens=max_tokens, cost=max_cost, siblings=siblings,
                        batch=batch, root=root)
    return None if allotment is None else {"max_tokens": allotment.tokens,
                                           "max_cost": allotment.cost}


class Held:
    """What `owner`'s children hold (running: their allotment, or more if they
    passed it) or spent (returned): the check before each model call, on the
    calling thread's kept connection (`ledger.db`)."""

    def __init__(self, owner: str):
        self.owner = owner

    def __call__(self) -> tuple[int, float]:
        with ledger.db() as conn:
            return ledger.held(conn, self.owner)
