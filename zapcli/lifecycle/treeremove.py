"""Removing a subagent's tree, for `worktree rm`, `gc` and `pick`: the
user's `worktree.teardown` first (frozen in the spawn record), then git's
removal, then a `worktree_removed` record in the trail of every subagent
that had the tree, naming the branch's last commit — so `continue` can make
the tree again from it, and no commit of a run is ever unreachable
without a trail saying where it was (C28).

Imports `zapcli.worktrees`, `zapcli.lifecycle.observe`, `zapcli.trail`. A
teardown that fails does not keep the tree: its output is in the result.

The teardown runs on what agent work left in the tree (its Makefile, its
`package.json`), so it runs in the sandbox that work had: the caller, which
knows the backends, passes how it is started (`zapcli.backends.sandboxed.
tree_box`). One that cannot be had now is not run (said in the result
and the trail); the tree goes all the same.
"""

from __future__ import annotations

import os
import shutil
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
    from collections.abc import Callable
    from typing import Any

    from zapcli.trail.model import SpawnRecord

    # (the spawn records of the tree's subagents, the tree, a scratch folder) ->
    # (starts, held placeholders, notes, environment or None) or why it cannot run
    Boxes = Callable[[list[SpawnRecord], str, Path], Any]


@plain
class Removal:
    done: Removed
    teardown: hooks.HookRun | None = None

    @property
    def teardown_note(self) -> str:
        t = self.teardown
        return "" if t is None or t.ok else f"worktree teardown {t.failure()}"


def _spawns(ids: list[str]) -> list[SpawnRecord]:
    out = []
    for sid in ids:
        try:
            out.append(load(sid).spawn)
        except NotFound:
            continue
    return out


def teardown_of(spawns: list[SpawnRecord]) -> str | None:
    """The `worktree.teardown` command frozen with the tree (its first subagent's)."""
    for spawn in spawns:
        command = (spawn.worktree or {}).get("teardown")
        return command if isinstance(command, str) and command.strip() else None
    return None


def teardown(tree: Any, spawns: list[SpawnRecord], command: str, boxes: Boxes) -> hooks.HookRun:
    """Run `command` in the tree, in the sandbox its subagents' work had."""
    r = tree.receipt
    scratch = store.path_for(tree.id, store.TMP)
    try:
        box = boxes(spawns, r.path, scratch)
        if isinstance(box, str):
            return hooks.HookRun.refused(command, f"{box}; its tree holds agent work, "
                                         "which runs only in the sandbox that work had")
        starts, held, _notes, env = box
        env = {**(os.environ if env is None else env), "ZAPCLI_ID": tree.id,
               "ZAPCLI_WORKTREE": r.path, "ZAPCLI_REPO": r.repo}
        try:
            return hooks.run(command, r.path, env, hooks.TEARDOWN_TIMEOUT_S, box=starts)
        finally:
            if held is not None:
                held.release()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def remove_tree(tree: Any, st: TreeState, *, force: bool = False, by: str,
                boxes: Boxes, same_as: dict[str, str] | None = None) -> Removal:
    """Tear down and remove `tree` (a `lifecycle.worktrees.Tree`); `same_as`
    as `worktrees.remove.remove` takes it. Raises GitError when git refuses
    or fails (the teardown has run by then)."""
    r = tree.receipt
    ran = None
    spawns = _spawns(tree.ids)
    command = teardown_of(spawns)
    if command and Path(r.path).is_dir() and not r.repo_gone:
        ran = teardown(tree, spawns, command, boxes)
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
