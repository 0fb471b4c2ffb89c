"""What a spawn takes from the tree it is spawned in (docs/explanation/rules.md#budgets): its parent
(the run, or the subagent whose work runs `zapcli spawn`), the run it
belongs to (so it never outlives it), its allotment of the parent's budget,
its place under the run's `--max-subagents`, and its price.

Imports `zapcli.budget.allot` (the allotment, the money check), `zapcli.prices`,
`zapcli.lifecycle.observe` — SQLite only for a spawn inside a run or under a
parent with a budget, so a plain `zapcli spawn` pays nothing for it.
"""

from __future__ import annotations

import os

from zapcli.config import Settings
from zapcli.errors import NotFound, ZapcliError
from zapcli.plain import plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUN_PREFIX = "run_"  # a `zapcli run`'s id, and the session of everything it starts


@plain
class Placement:
    """The spawn-record fields a tree decides, and what to undo if the spawn fails."""

    fields: dict[str, Any]
    reserved: bool = False
    root: str | None = None
    unfunded: str | None = None  # why its tree could not fund it: it ends `failed` (budget)


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


def place(sid: str, session: str, cli: str, model: str | None, *, max_tokens: int | None,
          max_cost: float | None, settings: Settings, parent: str | None = None,
          run: dict[str, Any] | None = None, siblings: int = 1,
          batch: str | None = None) -> Placement:
    """Decide the tree fields of a new subagent `sid` and reserve its
    allotment (`zapcli.budget.allot`: raises its BudgetSpent, or UsageError for
    a dollar budget on an unpriced model; nothing is created then)."""
    parent = parent_of(parent)
    price = None
    if model and settings.prices:  # else none is configured for it (a shell has no model)
        from zapcli import prices

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
    owner = _own_budget(up.spawn) if up is not None else (None, None)
    budgeted = owner != (None, None)
    if root is None and not budgeted and not (parent or "").startswith(RUN_PREFIX):
        if max_cost is not None:  # without a dollar budget an unbudgeted spawn loads no ledger
            from zapcli.budget import allot

            allot.check_money(max_cost, cli, model, price)
        return Placement(fields)
    from zapcli.budget import allot

    given = allot.fund(parent or session, sid, cli, model, price, want=(max_tokens, max_cost),
                       owner_budget=owner if budgeted else None, owner_view=up,
                       run_parent=(parent or "").startswith(RUN_PREFIX), siblings=siblings,
                       batch=batch, root=root)
    if given is not None:
        fields["budget"] = given
    return Placement(fields, reserved=True, root=root)


def place_or_unfunded(sid: str, session: str, cli: str, model: str | None,
                      **kw: Any) -> Placement:
    """`place`; a child its tree's budget cannot fund (C41: nothing is free,
    all held or spent) is a Placement saying so, made but never started
    (`record_unfunded`) — its parent learns how many, not only an error."""
    try:
        return place(sid, session, cli, model, **kw)
    except ZapcliError as exc:  # not allot's BudgetSpent by name: an unbudgeted spawn stays light
        if type(exc).__name__ != "BudgetSpent" or exc.code != "token_budget":
            raise  # --max-subagents: the spawn is refused; any other error is itself
        parent = parent_of(kw.get("parent"))
        return Placement({"parent": parent} if parent else {}, unfunded=exc.message)


def record_unfunded(p: Any) -> Any:
    """Create the subagent `p` (an `ops.spawn.Prepared`) as ended `failed`
    (budget): its trail, in its session, never started. The SpawnResult."""
    from zapcli.lifecycle import session as sessions
    from zapcli.lifecycle.queue import session_lock
    from zapcli.ops.spawn import SpawnResult
    from zapcli.redact import display, mark, secret_values
    from zapcli.trail import ending, records, store
    from zapcli.trail.model import Outcome, Status

    reason = f"budget: not funded — {p.placed.unfunded}"
    # under the session's queue lock: a trail with no process record yet reads as queued, and a
    # sibling's `drain` (a child ending, another spawn) would start it between its two records
    with session_lock(p.session):
        sessions.add(p.session, p.sid)
        try:
            store.create_trail(p.sid, p.fields, secret_values(), sync=False)
            ending.end(store.path_for(p.sid), Outcome(Status.FAILED, None, reason), by="budget")
        except Exception:
            store.path_for(p.sid).unlink(missing_ok=True)
            sessions.forget(p.session, p.sid)
            raise
        sessions.deactivate(p.session, p.sid)
    return SpawnResult(id=p.sid, status=Status.FAILED, cli=p.cli, task=display(mark(p.task)),
                       created=records.iso_utc(p.now), agent=p.fields.get("agent"),
                       warnings=(*p.warnings, f"{p.sid} was not funded by its tree's budget and "
                                 f"ended failed (budget): {p.placed.unfunded}"))


def undo(sid: str, placed: Placement) -> None:
    """The spawn failed after `place`: give back the allotment and the count."""
    if placed.reserved:
        from zapcli.budget import allot

        allot.unreserve(sid, placed.root)
