"""`zapcli usage` and settlement (docs/explanation/rules.md#tokens, docs/explanation/rules.md#budgets).

Imports `zapcli.ledger`, `zapcli.lifecycle`, `zapcli.lifecycle.session`. Collecting a
terminal subagent (poll, wait, usage, the parent's subagent tool, its own
runner at exit) settles its figures — the totals of its trail — into the
ledger under its session, and returns its allotment to its tree. Settling is
idempotent: the row is replaced by the trail's totals, so a model call
recorded after the status is counted, and none twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zapcli import ledger
from zapcli.budget.allot import Budget
from zapcli.errors import NotFound, StateError
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import observe
from zapcli.lifecycle.status import View


def settle(view: View, *, strict: bool = False) -> bool:
    """Settle a terminal view (its figures, its allotment); True if the ledger changed.

    Observers (poll, wait) settle best effort: when the ledger cannot be
    written (a full disk) they go on, and a later collection settles it.
    With `strict` (`zapcli usage`) StateError is raised.
    """
    if not view.terminal or not (view.calls or view.input_tokens or view.output_tokens
                                 or view.parent):
        return False
    try:
        return ledger.settle(view.id, view.session, view.status, ledger.of(view),
                             tree_parent=view.parent)
    except StateError:
        if strict:
            raise
        return False


def usage(*, all_sessions: bool = False, session: str | None = None) -> list[ParentTotals]:
    """Per-session figures; this session (or `session`: a run's id is its
    session) only unless `all_sessions`. Every
    subagent whose trail is still there is read from it (settling the
    finished ones), so these are the figures poll and replay show."""
    session = session or sessions.current()
    if all_sessions:
        from zapcli.ops.listing import _all_ids

        todo = _all_ids()
    else:
        todo = sessions.members(session)
    live: list[View] = []
    for sid in todo:
        try:
            view = observe(sid)
        except NotFound:
            continue
        if view.terminal:
            settle(view, strict=True)
        live.append(view)
    out = {p.parent: p for p in totals(None if all_sessions else session)}
    for view in live:
        if not (view.calls or view.input_tokens or view.output_tokens):
            continue  # nothing to count (no model calls: a shell command)
        p = out.setdefault(view.session, ParentTotals(view.session, ledger.Tokens(), []))
        if view.parent:
            p.tree_parents[view.id] = view.parent
        if view.terminal:
            with_figures(p, view.id, str(view.status), ledger.of(view))
        elif view.calls or view.input_tokens or view.output_tokens:
            p.running = p.running + ledger.of(view)
            p.live.append((view.id, str(view.status), ledger.of(view)))
    for p in out.values():  # each subagent's own budget, shown beside its row
        p.budgets = own_budgets([sid for sid, _, _ in (*p.subagents, *p.live)])
    return list(out.values())


def tree_figures(root: str, own: object = None) -> tuple[object, list[View]]:
    """The figures of the tree `root` heads — a run (every subagent of its
    session) — with `own` (the root's own `ledger.Tokens`) added; and the
    views read. Finished ones are settled on the way."""
    total = own if isinstance(own, ledger.Tokens) else ledger.Tokens()
    views = []
    for sid in sessions.members(root):
        try:
            view = observe(sid)
        except NotFound:
            continue
        if view.terminal:
            settle(view)
        views.append(view)
        total = total + ledger.of(view)
    return total, views


@dataclass
class ParentTotals:
    """One session: its run's own calls, its settled subagents, its budget."""

    parent: str
    own: ledger.Tokens
    subagents: list[tuple[str, str, ledger.Tokens]]  # (id, status, figures)
    budget: Budget | None = None
    running: ledger.Tokens = ledger.Tokens()  # subagents not finished yet, as their trails say now
    tree_parents: dict[str, str] = field(default_factory=dict)  # id -> whose work spawned it
    live: list[tuple[str, str, ledger.Tokens]] = field(default_factory=list)  # the running ones
    budgets: dict[str, Budget] = field(default_factory=dict)  # a subagent's own tree budget, by id

    @property
    def total(self) -> ledger.Tokens:
        out = self.own
        for _, _, t in self.subagents:
            out = out + t
        return out

    @property
    def tree_total(self) -> int:
        """Input + output tokens of the run and every subagent it started."""
        return (self.total + self.running).total

    @property
    def tree(self) -> ledger.Tokens:
        return self.total + self.running


def totals(parent: str | None = None) -> list[ParentTotals]:
    """Ledger rows per session (all sessions when `parent` is None)."""
    with ledger.db() as conn:
        where, args = ("WHERE parent = ?", (parent,)) if parent else ("", ())
        rows = conn.execute(f"SELECT parent, subagent_id, status, tree_parent, {ledger.COLUMNS} FROM "
                            f"ledger_settlement {where} ORDER BY settled_at", args).fetchall()
        run_where, run_args = ("WHERE run_id = ?", (parent,)) if parent else ("", ())
        runs = {r[0]: ledger.Tokens(*r[1:]) for r in conn.execute(
            f"SELECT run_id, {ledger.COLUMNS} FROM ledger_run {run_where}", run_args)}
        tree_where = "WHERE owner = ?" if parent else "WHERE owner LIKE 'run_%'"
        budgets = {r[0]: Budget(*r[1:]) for r in conn.execute(
            f"SELECT owner, max_tokens, max_cost, max_subagents, started FROM ledger_tree "
            f"{tree_where}", run_args)}
    out: dict[str, ParentTotals] = {}

    def one(p: str) -> ParentTotals:
        return out.setdefault(p, ParentTotals(p, runs.get(p, ledger.Tokens()), []))

    for p, sid, status, tree_parent, *figures in rows:
        one(p).subagents.append((sid, status, ledger.Tokens(*figures)))
        if tree_parent:
            one(p).tree_parents[sid] = tree_parent
    for p in runs:
        one(p)
    if parent:
        one(parent)
    for p, budget in budgets.items():
        if budget.limited or p in out:
            one(p).budget = budget
    return list(out.values())


def own_budgets(ids: list[str]) -> dict[str, Budget]:
    """The budget of each subagent's own tree that has one (`spawn
    --max-tokens`/`--max-cost`, or the share its parent's tree allotted
    it): recorded once its work spawned, else as its spawn record asked
    (its trail's first line alone is read)."""
    if not ids:
        return {}
    with ledger.db() as conn:  # one row per budgeted tree that spawned: a small table
        trees = {r[0]: Budget(*r[1:]) for r in conn.execute(
            "SELECT owner, max_tokens, max_cost, max_subagents, started FROM ledger_tree")}
    out = {}
    for sid in ids:
        known = trees.get(sid)
        found = known if known is not None and known.limited else _asked(sid)
        if found is not None:
            out[sid] = found
    return out


def _asked(sid: str) -> Budget | None:
    from zapcli.trail import store
    from zapcli.trail.reader import spawn_of

    try:
        spawn = spawn_of(store.path_for(sid))
    except OSError:
        return None  # its trail went (rm, retention): its settled row stays
    cost = spawn.raw.get("max_cost") if spawn is not None else None
    cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    if spawn is None or (spawn.max_tokens is None and cost is None):
        return None
    return Budget(spawn.max_tokens, cost)


def with_figures(p: ParentTotals, sid: str, status: str, figures: ledger.Tokens) -> None:
    """Put a subagent's current figures in place of its settled row (or add them)."""
    p.subagents = [row for row in p.subagents if row[0] != sid] + [(sid, status, figures)]
