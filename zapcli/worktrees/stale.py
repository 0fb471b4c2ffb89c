"""Stale results: has the checkout's branch moved since a tree's base, and
does the tree's work still merge cleanly into it? For `poll`, `attempts`
and `merge`.

Imports `zapcli.worktrees.git`, `zapcli.worktrees.merge` (the checkout, the
object-store merge). Nothing is written but loose objects: the checkout and
the tree stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable

from zapcli.worktrees import git as g
from zapcli.worktrees.merge import Checkout, checkout, merge_tree

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


def note(r: g.Receipt, work: str | None | Callable[[], str | None],
         co: Checkout | None = None, since_base: int | None = None) -> dict[str, Any]:
    """{checkout_branch, workspace_head, base_moved, commits_since_base,
    merges_cleanly, conflicts, already_merged}: `merges_cleanly` is asked
    only when the branch moved (from the base itself a merge is a
    fast-forward) and there is work to merge (`work`: its commit, or what
    finds it, called only then); None when it was not asked or git could
    not tell. `already_merged`: the checkout's HEAD holds all of the work
    (merged by `zapcli merge`, squashed or not, or by hand): the merge would
    change nothing. `since_base`: the commits since the base, when the caller
    has counted them (`zapcli.worktrees.merge.ancestry`)."""
    out: dict[str, Any] = {"checkout_branch": None, "workspace_head": None, "base_moved": False,
                           "commits_since_base": 0, "merges_cleanly": None, "conflicts": [],
                           "already_merged": False}
    try:
        co = co or checkout(r.checkout())
    except g.GitError:
        return out
    out.update(checkout_branch=co.branch, workspace_head=co.head, base_moved=co.head != r.base)
    if not out["base_moved"]:
        return out
    try:
        assert co.place is not None
        if since_base is None:
            count = g.git(["rev-list", "--count", f"{r.base}..{co.head}"], co.place, check=False,
                          timeout=20)
            since_base = int(count.stdout.strip() or 0) if count.returncode == 0 else 0
        out["commits_since_base"] = since_base
        commit = work() if callable(work) else work
        if commit:
            tree, conflicts = merge_tree(co.place, co.head, commit)
            out.update(merges_cleanly=tree is not None, conflicts=conflicts)
            if tree is not None:
                held = g.git(["rev-parse", f"{co.head}^{{tree}}"], co.place, check=False,
                             timeout=20)
                out["already_merged"] = held.returncode == 0 and held.stdout.strip() == tree
    except (g.GitError, ValueError):
        pass
    return out

