"""Git worktrees for `--worktree` subagents (docs/explanation/rules.md#parallel-coding): the git side only.

Imports `zapcli.paths`, `zapcli.locks`, `zapcli.errors`; never the trail,
processes or the CLI. `git.py` is the one git runner (it runs nothing a tree
or its configuration chose; `drivers.py` lists the filters and merge drivers
it turns off); `place.py` says which repository git works on, from the
receipt, and refuses a tree whose git files moved; `create.py` makes a
subagent's tree (serialized per repository); `fence.py` is what its sandbox
may write of the repository (its own branch, no other); `inspect.py` tells
what a tree holds (dirty, untracked, unpushed commits); `remove.py` removes
one through `git worktree remove` only. Which trees are in use by a live
subagent, and what `gc` may remove, is decided in `zapcli.lifecycle.worktrees`.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.paths import trees_dir

BRANCH_PREFIX = "zapcli/"


def branch_for(sid: str) -> str:
    """The branch of a subagent's tree: `zapcli/<id>`."""
    return BRANCH_PREFIX + sid


def root() -> Path:
    """Where the trees live: `<state>-worktrees/` beside the state folder (`~/.local/state/zapcli-worktrees`). Outside every
    repository, so a tree never shows up as untracked files of its own
    repository; and outside the state folder, whose files only a person may
    edit (approvals are recorded there), so an agent may edit its tree. Like
    the state folder, it is one of zapcli's own (`zapcli.paths.control_roots`):
    hidden from agent work, but the tree it works in."""
    return trees_dir()


def path_for(sid: str) -> Path:
    return root() / sid
