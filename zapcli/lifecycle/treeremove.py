"""Removing a subagent's tree, for `worktree rm`, `gc` and `pick`: the
user's `worktree.teardown` first (frozen in the spawn record), then git's
removal, then a `worktree_removed` record in the trail of every subagent
that had the tree, naming the branch's last commit — so `continue` can make
the tree again from it, and no commit of a run is ever unreachable
without a trail saying where it was (C28).

Imports `zapcli.worktrees`, `zapcli.lifecycle.observe`, `zapcli.trail`. A
teardown that fails does not keep the tree: its output is in the result.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.errors import NotFound
from zapcli.lifecycle.observe import load
from zapcli.plain import plain
from zapcli.trail import store
from zapcli.worktrees import hooks
from zapcli.worktrees.inspect import TreeState
from zapcli.worktrees.remove import Removed, remove

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


@plain
class Removal:
    done: Removed
    teardown: hooks.HookRun | None = None

    @property
    def teardown_note(self) -> str:
        t = self.teardown
        return "" if t is None or t.ok else f"worktree teardown {t.failure()}"


def teardown_of(ids: list[str]) -> str | None:
    """The `worktree.teardown` command frozen with the tree (its first subagent's)."""
    for sid in ids:
        try:
            tree = load(sid).spawn.worktree or {}
        except NotFound:
            continue
        command = tree.get("teardown")
        return command if isinstance(command, str) and command.strip() else None
    return None


def remove_tree(tree: Any, st: TreeState, *, force: bool = False, by: str,
                same_as: dict[str, str] | None = None) -> Removal:
    """Tear down and remove `tree` (a `lifecycle.worktrees.Tree`); `same_as`
    as `worktrees.remove.remove` takes it. Raises GitError when git refuses
    or fails (the teardown has run by then)."""
    r = tree.receipt
    ran = None
    command = teardown_of(tree.ids)
    if command and Path(r.path).is_dir() and not r.repo_gone:
        env = {**os.environ, "ZAPCLI_ID": tree.id, "ZAPCLI_WORKTREE": r.path, "ZAPCLI_REPO": r.repo}
        ran = hooks.run(command, r.path, env, hooks.TEARDOWN_TIMEOUT_S)
    done = remove(r, st, force=force, same_as=same_as)
    fields = {"path": r.path, "branch": r.branch, "tip": st.tip or st.head,
              "branch_deleted": done.branch, "by": by,
              **({"teardown": ran.to_dict()} if ran is not None else {})}
    for sid in tree.ids:
        try:
            store.append(store.path_for(sid), "worktree_removed", fields, sync=False)
        except (NotFound, OSError):
            continue  # a trail removed meanwhile: the tree is gone all the same
    return Removal(done, ran)
