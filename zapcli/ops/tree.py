"""What a spawn takes from the tree it is spawned in (SPEC §19): its parent
(the run, or the subagent whose work runs `zapcli spawn`), the run it
belongs to (so it never outlives it), its allotment of the parent's budget,
its place under the run's `--max-subagents`, and its price.

Imports `zapcli.ledger`, `zapcli.prices`, `zapcli.lifecycle.observe` —
SQLite only for a spawn inside a run or under a parent with a budget, so a
plain `zapcli spawn` pays nothing for it.
"""

from __future__ import annotations

import os

from zapcli.config import Settings
from zapcli.errors import NotFound, UsageError, param
from zapcli.plain import plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUN_PREFIX = "run_"  # a `zapcli run`'s id, and the session of everything it starts
COST_REPORTED = ("claude",)  # backends whose CLI reports each call's cost


@plain
class Placement:
    """The spawn-record fields a tree decides, and what to undo if the spawn fails."""

    fields: dict[str, Any]
    reserved: bool = False
    root: str | None = None


def parent_of(explicit: str | None) -> str | None:
    """Whose work spawns: given (the run's tool), or the subagent whose marker
    the caller's environment carries (its work runs `zapcli spawn`)."""
    if explicit:
        return explicit
    marker = os.environ.get("ZAPCLI_SUBAGENT_ID", "")
    return marker if marker.startswith("sa_") else None


def inherit_trust(explicit: str | None) -> None:
    """A spawn from a subagent's work takes the workspace trust recorded
    when that subagent was spawned (nothing, when its record cannot be
    read); a runner or a `zapcli run` already holds its own decision."""
    from zapcli import trust

    parent = parent_of(explicit)
    if parent is None or trust.inherited():
        return
    up = parent_spawn(parent)
    spawned = getattr(up, "spawn", None)
    raw: dict[str, Any] = spawned.raw if spawned is not None else {}
    tree = raw.get("worktree")
    path = tree.get("path") if isinstance(tree, dict) else None
    trust.inherit(raw.get("trust"), path if isinstance(path, str) else None)


def parent_spawn(parent: str | None) -> Any:
    """The trail of the subagent `parent`, as read (None: a run, or unknown)."""
    if parent is None or parent.startswith(RUN_PREFIX):
        return None
    from zapcli.lifecycle.observe import load

    try:
        return load(parent)
    except NotFound:
        return None


def _own_budget(spawn: Any) -> tuple[int | None, float | None]:
    """A subagent's budget as an owner: the allotment its tree gave it, else
    its own --max-tokens / --max-cost."""
    raw = spawn.raw
    given = raw.get("budget") if isinstance(raw.get("budget"), dict) else {}
    tokens = given.get("max_tokens", spawn.max_tokens)
    cost = given.get("max_cost", raw.get("max_cost"))
    return (tokens if isinstance(tokens, int) else None,
            cost if isinstance(cost, (int, float)) else None)


def _check_money(max_cost: float | None, cli: str, model: str | None,
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
        raise UsageError(prices.unknown_message(model))


def place(sid: str, session: str, cli: str, model: str | None, *, max_tokens: int | None,
          max_cost: float | None, settings: Settings, parent: str | None = None,
          run: dict[str, Any] | None = None, siblings: int = 1,
          batch: str | None = None) -> Placement:
    """Decide the tree fields of a new subagent `sid` and reserve its
    allotment (raises `ledger.BudgetSpent`, or UsageError for a dollar budget
    on an unpriced model; nothing is created then)."""
    from zapcli import prices

    parent = parent_of(parent)
    price = prices.configured(model, settings.prices)
    fields: dict[str, Any] = {}
    if price is not None:
        fields["price"] = price
    if parent:
        fields["parent"] = parent
    up = parent_spawn(parent)
    run = run or (up.spawn.raw.get("run") if up is not None else None)
    if isinstance(run, dict):
        fields["run"] = run
    root = session if session.startswith(RUN_PREFIX) else None
    owner_tokens, owner_cost = _own_budget(up.spawn) if up is not None else (None, None)
    budgeted = owner_tokens is not None or owner_cost is not None
    if root is None and not budgeted and not (parent or "").startswith(RUN_PREFIX):
        _check_money(max_cost, cli, model, price)
        return Placement(fields)
    from zapcli import ledger

    own = ledger.Tokens()
    if up is not None and budgeted:
        ledger.set_budget(parent, ledger.Budget(owner_tokens, owner_cost))  # type: ignore[arg-type]
        own = ledger.of(up)
    elif parent and parent.startswith(RUN_PREFIX):
        own = ledger.run_tokens(parent)
    tree = ledger.budget_of(parent) if parent else None
    if tree is not None and tree.max_cost is not None:
        _check_money(max_cost or tree.max_cost, cli, model, price)
    else:
        _check_money(max_cost, cli, model, price)
    allot = ledger.reserve(parent or session, sid, own, tokens=max_tokens, cost=max_cost,
                           siblings=siblings, batch=batch, root=root) if parent or root else None
    if allot is not None:
        fields["budget"] = {"max_tokens": allot.tokens, "max_cost": allot.cost}
    return Placement(fields, reserved=True, root=root)


def undo(sid: str, placed: Placement) -> None:
    """The spawn failed after `place`: give back the allotment and the count."""
    if placed.reserved:
        from zapcli import ledger

        ledger.unreserve(sid, placed.root)
