"""A tree's whole work as one commit: what `diff`, `merge` and the stale-base
note look at — committed and uncommitted work alike, untracked files
included (ignored files are not: git would not commit them either).

Imports `zapcli.worktrees.git`. The snapshot is built in a copy of the
tree's index (`GIT_INDEX_FILE`), so the tree itself, its index and its
branch are never touched: the commit is a loose object nobody references
until `keep` puts it on the branch (`merge` does, once it goes ahead).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from zapcli.worktrees import git as g

IDENTITY = {"GIT_AUTHOR_NAME": "zapcli", "GIT_AUTHOR_EMAIL": "zapcli@localhost",
            "GIT_COMMITTER_NAME": "zapcli", "GIT_COMMITTER_EMAIL": "zapcli@localhost"}


@dataclass(frozen=True)
class Snapshot:
    commit: str  # the tree's HEAD, or a commit on top of it holding the uncommitted work
    head: str  # the tree's HEAD
    uncommitted: bool  # `commit` holds work that was not committed
    on_branch: bool = True  # the tree's HEAD is its branch (not detached, not another branch)


def commit_tree(cwd: str, tree: str, parents: list[str], message: str) -> str:
    """`git commit-tree`, as the user when git knows who that is, else as zapcli."""
    args = ["commit-tree", tree, *[x for p in parents for x in ("-p", p)], "-m", message]
    proc = g.git(args, cwd, check=False)
    if proc.returncode != 0 and "identity" in (proc.stderr or "") + (proc.stdout or ""):
        proc = g.git(args, cwd, check=False, env=IDENTITY)
    if proc.returncode != 0:
        raise g.GitError(g._message(proc), proc.returncode)
    return proc.stdout.strip()


def take(path: str, branch: str, message: str) -> Snapshot:
    """The snapshot of the tree at `path` (its branch `branch`). Raises GitError."""
    out = g.git(["rev-parse", "HEAD", "--symbolic-full-name", "HEAD", "--git-path", "index"],
                path).stdout.split("\n")
    head, ref, index = out[0].strip(), out[1].strip(), out[2].strip()
    on_branch = ref == f"refs/heads/{branch}"
    status = g.git(["status", "--porcelain=v1", "-z", "--untracked-files=all",
                    "--ignore-submodules=all"], path).stdout
    if not status.strip("\0"):
        return Snapshot(head, head, False, on_branch)
    with tempfile.TemporaryDirectory(prefix="zapcli-snapshot-") as tmp:
        copy = str(Path(tmp) / "index")
        source = index if os.path.isabs(index) else os.path.join(path, index)
        try:
            shutil.copyfile(source, copy)  # its stat data: only changed files are read again
        except FileNotFoundError:
            pass  # no index yet: git builds one
        env = {"GIT_INDEX_FILE": copy}
        g.git(["add", "-A", "--", "."], path, env=env)
        tree = g.git(["write-tree"], path, env=env).stdout.strip()
    if tree == g.git(["rev-parse", "HEAD^{tree}"], path).stdout.strip():
        return Snapshot(head, head, False, on_branch)  # only a mode or a stat changed
    return Snapshot(commit_tree(path, tree, [head], message), head, True, on_branch)


def keep(path: str, branch: str, snap: Snapshot) -> None:
    """Put the snapshot's commit on the tree's branch, and make the tree's
    index agree (its files already are that commit). Raises GitError."""
    if not snap.uncommitted:
        return
    g.git(["update-ref", "-m", "zapcli: the uncommitted work of the tree", f"refs/heads/{branch}",
           snap.commit, snap.head], path)
    g.git(["reset", "-q"], path)
