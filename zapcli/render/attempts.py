"""`spawn --attempts`, `attempts` and `pick`."""

from __future__ import annotations

from typing import Any

from zapcli.money import dollars
from zapcli.render import merge as render_merge
from zapcli.render import spawn as render_spawn
from zapcli.render.common import STATUS_STYLE, Lines, reason_line, status_phrase, task_line
from zapcli.render.diff import stale_line, stat_words
from zapcli.render.docschema import stamp
from zapcli.render.text import alt, escape_controls


def spawned_lines(results: list[Any]) -> Lines:
    out: Lines = [("bold", f"[SubAgent] {len(results)} attempts, each in its own worktree")]
    for res in results:
        out.append((STATUS_STYLE.get(res.status, ""), f"  {res.id}: {res.status} "
                    f"({res.cli}{', agent ' + res.agent if res.agent else ''})"))
    out.append(("", f"Task: {task_line(results[0].task, 200)}" if results else ""))
    out.append(("dim", f"Compare: {alt('zapcli attempts ' + results[0].id, 'action attempts')}"
                       if results else ""))
    return out


def spawned_tool_lines(results: list[Any]) -> Lines:
    warnings = dict.fromkeys(w for r in results for w in r.warnings)
    return spawned_lines(results) + [("", f"Warning: {w}") for w in warnings]


def spawned_doc(results: list[Any]) -> dict[str, Any]:
    return stamp("spawn-attempts", {"ids": [r.id for r in results], "subagents": [render_spawn.record(r) for r in results]})


def _tokens(v: Any) -> str:
    text = f"{v.input_tokens:,} in / {v.output_tokens:,} out tokens" if (
        v.input_tokens or v.output_tokens) else "no tokens"
    return text + (f", {dollars(v.cost_usd)}" if v.cost_usd is not None else "")


def _attempt_lines(a: Any) -> Lines:
    if a.view is None:
        return [("red", f"  {a.index}. {a.id}: {a.missing}")]
    v = a.view
    who = v.cli + (f" {a.model}" if a.model else "") + (f" (agent {v.agent})" if v.agent else "")
    out: Lines = [(STATUS_STYLE.get(v.status, ""), f"  {a.index}. {a.id}: {status_phrase(v)} — {who}")]
    reason = reason_line(v)
    if reason is not None:
        out.append((reason[0], "   " + reason[1]))
    diff = stat_words(a.diff) if a.diff is not None else (a.missing or "no diff")
    out.append(("", f"     {diff}; {_tokens(v)}"))
    if a.merged:
        out.append(("green", f"     merged ({a.merged.get('how')}) into {a.merged.get('into')}"))
    if a.check is not None:
        c = a.check
        if "not_run" in c:
            out.append(("dim", f"     check: not run ({c['not_run']})"))
        else:
            took = f"{c['ms'] / 1000:.1f}s"
            where = "" if c.get("sandboxed", True) else ", not sandboxed"
            out.append(("green" if c["ok"] else "red",
                        f"     check: {escape_controls(c['summary'])} ({took}{where})"))
            for note in c.get("notes") or ():
                out.append(("yellow", f"     check: {escape_controls(str(note))}"))
    stale = stale_line(a.stale, a.id)
    if stale is not None:
        out.append((stale[0], "     " + stale[1]))
    return out


def lines(res: Any) -> Lines:
    n = len(res.attempts)
    out: Lines = [("bold", f"[SubAgent] {n} attempts at: {task_line(res.task, 120)}")]
    if res.check:
        out.append(("dim", f"  check: {escape_controls(res.check)}"))
    for a in res.attempts:
        out.extend(_attempt_lines(a))
    out.append(("dim", "Keep one: " + alt("zapcli pick ID", "action pick with its id")
                + " (merges it, removes the other trees); look closer: "
                + alt("zapcli diff ID", "action diff")))
    return out


def _attempt_doc(a: Any) -> dict[str, Any]:
    v = a.view
    return {"id": a.id, "index": a.index, "status": v.status if v else None,
            "cli": v.cli if v else None, "model": a.model, "agent": v.agent if v else None,
            "reason": v.reason if v else None, "elapsed_s": v.elapsed_s if v else None,
            "diff": a.diff, "tokens": {"input_tokens": v.input_tokens, "output_tokens":
                                       v.output_tokens, "cached_tokens": v.cached_tokens} if v else None,
            "cost_usd": v.cost_usd if v else None, "check": a.check, "stale": a.stale,
            "merged": a.merged, "missing": a.missing}


def doc(res: Any) -> dict[str, Any]:
    return stamp("attempts", {"task": res.task, "check": res.check, "attempts": [_attempt_doc(a) for a in res.attempts]})


def pick_lines(res: Any) -> Lines:
    out = render_merge.lines(res.merge)
    for sid in res.stopped:
        out.append(("yellow", f"  stopped {sid} (it was still running)"))
    for sid, what in res.removed.items():
        out.append(("dim", f"  removed the tree of {sid}; {what}"))
    for sid, why in res.kept.items():
        out.append(("yellow", f"  kept the tree of {sid}: {why}"))
    return out


def pick_doc(res: Any) -> dict[str, Any]:
    return stamp("pick", {**render_merge.doc(res.merge), "picked": res.merge.id, "siblings": res.siblings,
            "stopped": res.stopped, "removed": res.removed, "kept": res.kept})
