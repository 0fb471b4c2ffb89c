"""`zapcli diff ID [--stat] [--name-only]`: a subagent's tree against its
base — committed and uncommitted work alike, untracked files included.

Imports `zapcli.lifecycle.treework`, `zapcli.worktrees`. Read-only: the
uncommitted work is read through a copy of the tree's index, so neither the
tree nor its branch changes (docs/explanation/rules.md#parallel-coding, #23).
"""

from __future__ import annotations

from zapcli.errors import UsageError, ZapcliError, param
from zapcli.lifecycle import treework
from zapcli.plain import plain
from zapcli.worktrees import git as g
from zapcli.worktrees.diff import Changes, changes

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


@plain
class DiffResult:
    id: str
    mode: str  # patch | stat | name-only
    branch: str
    base: str
    path: str
    commit: str  # what was compared with the base
    source: str  # tree (its snapshot) | branch (the tree is gone)
    uncommitted: bool  # uncommitted work is part of it
    changes: Changes


def diff(sid: str, *, stat: bool = False, name_only: bool = False) -> DiffResult:
    """The subagent's work against its base. Raises ZapcliError."""
    if stat and name_only:
        raise UsageError(f"{param('stat')} and {param('name_only')} are two views; choose one")
    work = treework.of(sid)
    assert work.commit is not None
    r = work.receipt
    try:
        found = changes(r.checkout(), r.base, work.commit, patch=not (stat or name_only))
    except g.GitError as exc:
        raise ZapcliError(f"git diff failed for {work.sid}: {exc.message}") from None
    return DiffResult(work.sid, "stat" if stat else "name-only" if name_only else "patch",
                      r.branch, r.base, r.path, work.commit,
                      "tree" if work.tree_exists else "branch",
                      bool(work.snap and work.snap.uncommitted), found)


def summary(work: treework.Work) -> dict[str, Any] | None:
    """The diff stat of a work (for `attempts`), or None when git cannot tell."""
    if work.commit is None:
        return None
    r = work.receipt
    try:
        return changes(r.checkout(), r.base, work.commit).stat()
    except g.GitError:
        return None
