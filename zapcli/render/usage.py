"""`usage`: token totals per session (parent run) and per subagent."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines


def lines(parents: list[Any]) -> Lines:
    out: Lines = []
    for p in parents:
        t = p.total
        sub_in = sum(x.input_tokens for _, _, x in p.subagents)
        sub_out = sum(x.output_tokens for _, _, x in p.subagents)
        if not (t.total or t.cached_tokens or p.running.total) and t.cost_usd is None:
            out.append(("bold", f"[SubAgent] session {p.parent}: no model calls (nothing it ran "
                                "used tokens, e.g. sh subagents)"))
        else:
            own = (f"its own calls {p.own.input_tokens} in / {p.own.output_tokens} out"
                   if p.own.total else "no model calls of its own")
            subs = (f"its subagents {sub_in} in / {sub_out} out" if sub_in or sub_out
                    else "no model calls by its finished subagents")
            out.append(("bold", f"[SubAgent] session {p.parent}: {t.input_tokens} in, "
                                f"{t.output_tokens} out ({t.cached_tokens} cached) — {own}, {subs}"
                                + (f", ${t.cost_usd:.4f} reported" if t.cost_usd is not None else "")))
        if p.running.total:
            out.append(("", f"  still running: {p.running.input_tokens} in, "
                            f"{p.running.output_tokens} out (counted when collected)"))
        if p.budget:
            pct = 100 * p.tree_total / p.budget
            style = "red" if pct >= 100 else "yellow" if pct >= 80 else "dim"
            out.append((style, f"  budget: {p.tree_total} of {p.budget} tokens ({pct:.0f}%), the "
                               "run and every subagent it started"))
        for sid, status, tok in p.subagents:
            cost = f", ${tok.cost_usd:.4f}" if tok.cost_usd is not None else ""
            out.append(("", f"  {sid}: {status}, {tok.input_tokens} in, {tok.output_tokens} out{cost}"))
    if not out:
        out.append(("", "[SubAgent] no token usage recorded"))
    return out


def doc(parents: list[Any]) -> dict[str, Any]:
    return {"sessions": [{
        "session": p.parent, "own": vars(p.own), "total": vars(p.total),
        "running": vars(p.running), "tree_total": p.tree_total, "budget": p.budget,
        "subagents": [{"id": sid, "status": st, **vars(t)} for sid, st, t in p.subagents]}
        for p in parents]}
