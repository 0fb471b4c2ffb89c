"""`zapcli worktree list|rm`: the git worktrees of --worktree subagents."""

from __future__ import annotations

from zapcli.cli.output import emit, emit_each
from zapcli.ops import worktree as ops
from zapcli.render import worktree as render


def list_(json: bool = False) -> int:
    emit(json, render.list_doc, render.list_lines, ops.list_trees())
    return 0


def rm(ids: list[str], force: bool = False, json: bool = False) -> int:
    """One id: its tree's answer, or its error. Several: each answers on its
    own, as rm's do — the trees removed on stdout (--json: one document with
    each), each refusal a `zapcli: error:` line on stderr; exit 1 when any
    was refused."""
    if len(ids) == 1:
        emit(json, render.rm_doc, render.rm_lines, ops.remove(ids[0], force=force))
        return 0
    res = ops.remove_each(list(ids), force=force)
    return emit_each(json, render.rm_each_doc, render.rm_each_lines, res,
                     res if res.removed else None, [m for _c, m in res.refused.values()])
