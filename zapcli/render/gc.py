"""`gc`: what retention deleted or trimmed (or would, with --dry-run)."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines
from zapcli.render.docschema import stamp
from zapcli.render.text import counted


def summary(res: Any) -> str:
    """One line that counts all it did: subagents deleted and kept, then
    trails trimmed, worktrees and placeholders removed (each when any)."""
    dry = res.dry_run
    said = [f"{'would delete' if dry else 'deleted'} {counted(len(res.deleted), 'subagent')}, "
            f"{'would keep' if dry else 'kept'} {res.kept}"]
    if res.trimmed:
        said.append(f"{'would trim' if dry else 'trimmed'} {counted(len(res.trimmed), 'trail')}")
    trees = sum(1 for d in res.worktrees if d.action == "remove")
    places = len(getattr(res, "placeholders", ()))
    removed = [counted(n, noun) for n, noun in ((trees, "worktree"), (places, "placeholder")) if n]
    if removed:
        said.append(f"{'would remove' if dry else 'removed'} {' and '.join(removed)}")
    return "[SubAgent] gc: " + "; ".join(said)


def lines(res: Any) -> Lines:
    verb = "would delete" if res.dry_run else "deleted"
    out: Lines = [("bold", summary(res))]
    if res.skipped_reason:
        out.append(("yellow", f"  skipped: {res.skipped_reason}"))
    if res.kept_reason:
        out.append(("yellow", f"  kept the rest: {res.kept_reason}"))
    out += [("dim", f"  {sid}: {verb}") for sid in res.deleted]
    out += [("yellow", f"  {sid}: {why}") for sid, why in res.held.items()]
    trim = "would trim about" if res.dry_run else "trimmed"
    out += [("dim", f"  {sid}: {trim} {n} bytes") for sid, n in res.trimmed.items()]
    if res.dropped_envs:  # what an earlier version left: the keys a subagent was started with
        drop = "would remove" if res.dry_run else "removed"
        out.append(("dim", f"  {drop} the kept environment (its spawner's keys) of "
                           f"{len(res.dropped_envs)} subagent(s) that can no longer start"))
    if res.worktrees:
        from zapcli.render.worktree import decision_lines

        out += decision_lines(res.worktrees, res.dry_run)
    out += [("dim", f"  {path}: removed the placeholder a killed sandbox left")
            for path in getattr(res, "placeholders", ())]
    return out


def doc(res: Any) -> dict[str, Any]:
    return stamp("gc", {"dry_run": res.dry_run, "kept": res.kept, "deleted": res.deleted,
            "trimmed": res.trimmed, "skipped_reason": res.skipped_reason,
            "kept_reason": res.kept_reason, "held": res.held,
            "dropped_envs": res.dropped_envs, "worktrees": [_decision(d) for d in res.worktrees],
            "placeholders": list(getattr(res, "placeholders", ()))})


def _decision(d: Any) -> dict[str, Any]:
    from zapcli.render.worktree import decision_doc

    return decision_doc(d)
