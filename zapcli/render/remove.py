"""`rm` and `clean`: what was removed and what was refused, and why."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines, one_line
from zapcli.render.docschema import stamp


def lines(res: Any) -> Lines:
    noun = "subagent" if len(res.removed) == 1 else "subagents"
    out: Lines = [("bold", f"[SubAgent] removed {len(res.removed)} finished {noun}")]
    out += [("dim", f"  {sid}: removed" + (f", with its worktree {res.trees[sid]}"
                                            if sid in res.trees else ""))
            for sid in res.removed]
    out += [("yellow", f"  {sid}: {one_line(why, 300)}") for sid, why in res.trees_left.items()]
    out += [("yellow", f"  {sid}: {one_line(why, 200)}") for sid, why in res.kept.items()]
    out += [("red", f"  {one_line(why, 200)}") for why in res.refused.values()]
    return out


def doc(res: Any) -> dict[str, Any]:
    return stamp("remove", {"removed": res.removed,
            "refused": [{"id": sid, "message": why} for sid, why in res.refused.items()],
            "kept": [{"id": sid, "message": why} for sid, why in res.kept.items()],
            "worktrees_removed": [{"id": sid, "path": path} for sid, path in res.trees.items()],
            "worktrees_left": [{"id": sid, "message": why} for sid, why in res.trees_left.items()]})
