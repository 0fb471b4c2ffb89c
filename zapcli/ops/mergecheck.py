"""What refuses a merge (or a pick) before the work is looked at: no
worktree, not finished, its repository gone, its tree in use, two ways asked
(`ready`). `zapcli.ops.merge` raises it first; a surface that asks a person
to approve a merge (`zapcli call`, MCP, the run's approver) says it instead
of asking. Imports `zapcli.lifecycle` (treework, observe, worktrees).
"""

from __future__ import annotations

from zapcli.errors import UsageError, ZapcliError, param
from zapcli.lifecycle import treework
from zapcli.lifecycle.observe import observe
from zapcli.trail import reader
from zapcli.worktrees import git as g


def how_of(squash: bool, rebase: bool) -> str:
    if squash and rebase:
        raise UsageError(f"{param('squash')} and {param('rebase')} are two ways; choose one")
    return "squash" if squash else "rebase" if rebase else "merge"


def mergeable(sid: str, r: g.Receipt, s: reader.Summary | None = None) -> None:
    """Raises what refuses a merge of `sid` before its work is looked at:
    not finished, its repository gone, its tree in use (`s`: its summary,
    read just before)."""
    view = observe(sid, summary=s)
    if not view.terminal:
        raise ZapcliError(f"{sid} is {view.status}; only a finished subagent's work is merged "
                          f"(zapcli wait {sid}, or zapcli kill {sid})", code="not_finished")
    if r.repo_gone:
        raise ZapcliError(f"{sid} not merged: its repository {r.repo} no longer exists",
                          code="repo_gone")
    from zapcli.lifecycle.worktrees import live_users

    users = live_users(r.path)
    if users:  # a continuation (or another subagent) works in its tree now
        raise ZapcliError(f"{sid} not merged: its tree is in use by "
                          f"{', '.join(f'{i} ({st})' for i, st, _o in users)}; wait for it first",
                          code="in_use")


def ready(sid: str, *, squash: bool = False, rebase: bool = False) -> str:
    """The full id of `sid` when a merge of it is worth asking a person
    about; raises the ZapcliError `merge` would (no worktree, not finished,
    ...) without looking at the work, so a caller that asks first says
    that instead of asking (a surface's approval of a merge)."""
    how_of(squash, rebase)
    sid, _s, r = treework.receipt(sid)
    mergeable(sid, r)
    return sid
