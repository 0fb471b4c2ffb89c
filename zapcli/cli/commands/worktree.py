"""`zapcli worktree list|rm`: the git worktrees of --worktree subagents."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops import worktree as ops
from zapcli.render import worktree as render


def list_(json: bool = False) -> int:
    emit(json, render.list_doc, render.list_lines, ops.list_trees())
    return 0


def rm(id: str, force: bool = False, json: bool = False) -> int:
    emit(json, render.rm_doc, render.rm_lines, ops.remove(id, force=force))
    return 0
