"""`usage`: figures per session (a run and its tree), per subagent, and the
tree budget: tokens (cache reads and writes apart), model calls, cost."""

from __future__ import annotations

from typing import Any

from zapcli.money import dollars
from zapcli.render.common import Lines, tokens_text
from zapcli.render.docschema import stamp


def _figures(t: Any) -> str:
    calls = f" in {t.calls} model call{'s' if t.calls != 1 else ''}" if t.calls else ""
    return tokens_text(t) + calls


def _spent_of(b: Any, tokens: int, cost: float) -> list[str]:
    """What a tree used against each of its limits: "3,000 of 50,000 tokens (6%)"."""
    parts = []
    if b.max_tokens:
        parts.append(f"{tokens:,} of {b.max_tokens:,} tokens ({100 * tokens / b.max_tokens:.0f}%)")
    if b.max_cost:
        parts.append(f"{dollars(cost)} of {dollars(b.max_cost)} ({100 * cost / b.max_cost:.0f}%)")
    return parts


def _budget_lines(p: Any) -> Lines:
    b, tree = p.budget, p.tree
    parts = _spent_of(b, tree.total, tree.cost)
    out: Lines = []
    if parts:
        pct = max(tree.total / b.max_tokens if b.max_tokens else 0,
                  tree.cost / b.max_cost if b.max_cost else 0)
        style = "red" if pct >= 1 else "yellow" if pct >= 0.8 else "dim"
        out.append((style, f"  budget: {', '.join(parts)}, the run and every subagent it started"))
    if b.max_subagents:
        out.append(("dim", f"  subagents started: {b.started:,} of {b.max_subagents:,} (--max-subagents)"))
    return out


def _rows(p: Any) -> Lines:
    """One line per subagent, each under the subagent whose work spawned it."""
    rows = [(sid, st, t, True) for sid, st, t in p.subagents] + \
        [(sid, st, t, False) for sid, st, t in p.live]
    known = {r[0] for r in rows}
    kids: dict[str | None, list[Any]] = {}
    for row in rows:
        up = p.tree_parents.get(row[0])
        kids.setdefault(up if up in known else None, []).append(row)
    out: Lines = []

    def spent(sid: str, t: Any, depth: int = 0) -> tuple[int, float]:
        """Tokens and dollars of `sid` and every subagent under it."""
        tokens, cost = t.total, t.cost or 0.0
        for kid, _st, kt, _d in kids.get(sid, []) if depth < 16 else []:
            more = spent(kid, kt, depth + 1)
            tokens, cost = tokens + more[0], cost + more[1]
        return tokens, cost

    def walk(parent: str | None, depth: int) -> None:
        for sid, status, t, done in kids.get(parent, []):
            so_far = "" if done else " (so far)"
            b = p.budgets.get(sid)
            of = f"; {_own_budget(b, *spent(sid, t))}" if b is not None else ""
            out.append(("", f"  {'  ' * depth}{sid}: {status}, {_figures(t)}{so_far}{of}"))
            if depth < 16:
                walk(sid, depth + 1)

    walk(None, 0)
    return out


def _own_budget(b: Any, tokens: int, cost: float) -> str:
    """A subagent's own tree budget beside what it and its subagents used."""
    return f"budget: {', '.join(_spent_of(b, tokens, cost))} with its subagents"


def lines(parents: list[Any]) -> Lines:
    out: Lines = []
    for p in parents:
        t = p.tree
        if not (t.total or t.calls) and t.cost_usd is None:
            out.append(("bold", f"[SubAgent] session {p.parent}: no model calls (nothing it ran "
                                "used tokens, e.g. sh subagents; a `zapcli run` counts in a "
                                "session of its own, run_…: zapcli usage --all)"))
        else:
            own = f"its own calls {_figures(p.own)}" if p.own.calls or p.own.total else \
                "all by its subagents"
            out.append(("bold", f"[SubAgent] session {p.parent}: {_figures(t)} — {own}"))
        if p.running.total:
            out.append(("", f"  still running: {_figures(p.running)} so far"))
        if p.budget is not None:
            out.extend(_budget_lines(p))
        out.extend(_rows(p))
    if not out:
        out.append(("", "[SubAgent] no token usage recorded"))
    return out


def doc(parents: list[Any]) -> dict[str, Any]:
    def row(sid: str, st: str, t: Any, p: Any, done: bool) -> dict[str, Any]:
        b = p.budgets.get(sid)  # its own tree's limits (spawn --max-tokens, or its allotment)
        return {"id": sid, "status": st, "parent": p.tree_parents.get(sid), "finished": done,
                **t.doc(), "budget": b.max_tokens if b else None, "max_cost": b.max_cost if b else None}

    return stamp("usage", {"sessions": [{
        "session": p.parent, "own": p.own.doc(), "total": p.total.doc(),
        "running": p.running.doc(), "tree": p.tree.doc(), "tree_total": p.tree_total,
        "budget": p.budget.max_tokens if p.budget else None,
        "max_cost": p.budget.max_cost if p.budget else None,
        "max_subagents": p.budget.max_subagents if p.budget else None,
        "subagents_started": p.budget.started if p.budget else None,
        "subagents": [row(sid, st, t, p, True) for sid, st, t in p.subagents]
        + [row(sid, st, t, p, False) for sid, st, t in p.live]}
        for p in parents]})
