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
import stat
from pathlib import Path

from zapcli.plain import frozen
from zapcli.worktrees import git as g

IDENTITY = {"GIT_AUTHOR_NAME": "zapcli", "GIT_AUTHOR_EMAIL": "zapcli@localhost",
            "GIT_COMMITTER_NAME": "zapcli", "GIT_COMMITTER_EMAIL": "zapcli@localhost"}


@frozen
class Snapshot:
    commit: str  # the tree's HEAD, or a commit on top of it holding the uncommitted work
    head: str  # the tree's HEAD
    uncommitted: bool  # `commit` holds work that was not committed
    on_branch: bool = True  # the tree's HEAD is its branch (not detached, not another branch)


def commit_tree(where: g.Place, tree: str, parents: list[str], message: str) -> str:
    """`git commit-tree`, as the user when git knows who that is, else as zapcli.
    The message goes on stdin, ended by a newline as `-m` ends it: a message of
    any length (a squash carries the branch's messages, which its subagent
    wrote; one argument of a command line holds at most 128 KiB)."""
    args = ["commit-tree", tree, *[x for p in parents for x in ("-p", p)]]
    text = message if message.endswith("\n") else message + "\n"
    proc = g.git(args, where, check=False, input=text)
    if proc.returncode != 0 and "identity" in (proc.stderr or "") + (proc.stdout or ""):
        proc = g.git(args, where, check=False, env=IDENTITY, input=text)
    if proc.returncode != 0:
        raise g.GitError(g._message(proc), proc.returncode)
    return proc.stdout.strip()


def take(where: g.Place, branch: str, message: str, *, refresh: bool = False) -> Snapshot:
    """The snapshot of the tree at `where` (its branch `branch`). `refresh`: the
    tree is no one's but ours now (its subagent finished), so `git status` may
    write back what it learnt into the tree's index — the next look is fast
    (a tree fresh from `git worktree add` makes git re-read every file once).
    Raises GitError."""
    path = where.work_tree
    status = g.git(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal",
                    "--ignore-submodules=all"], where,
                   env={"GIT_OPTIONAL_LOCKS": "1"} if refresh else None).stdout
    head, ref, dirty = "", "", False
    for entry in status.split("\0"):
        if entry.startswith("# branch.oid "):
            head = entry[13:].strip()
        elif entry.startswith("# branch.head "):
            ref = entry[14:].strip()
        elif entry and not entry.startswith("#"):
            dirty = True
            break
    if not head or head == "(initial)":
        raise g.GitError(f"the tree {path} has no commit")
    on_branch = ref == branch
    if not dirty:
        return Snapshot(head, head, False, on_branch)
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="zapcli-snapshot-")  # no TemporaryDirectory: its finalizer
    try:  # is an atexit callback, and `zapcli merge` would not leave at once (`cli.entry`)
        copy = str(Path(tmp) / "index")
        _copy_index(os.path.join(where.git_dir, "index"), copy)
        env = {"GIT_INDEX_FILE": copy}
        g.git(["add", "-A", "--", "."], where, env=env)
        tree = g.git(["write-tree"], where, env=env).stdout.strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if tree == g.git(["rev-parse", "HEAD^{tree}"], where).stdout.strip():
        return Snapshot(head, head, False, on_branch)  # only a mode or a stat changed
    return Snapshot(commit_tree(where, tree, [head], message), head, True, on_branch)


def _copy_index(source: str, copy: str) -> None:
    """The tree's index, copied for its stat data (only changed files are read
    again); never read through a link. Nothing copied: git builds one."""
    import shutil

    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    with open(fd, "rb") as src:
        if stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            with open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst)


def keep(where: g.Place, branch: str, snap: Snapshot) -> None:
    """Put the snapshot's commit on the tree's branch, and make the tree's
    index agree (its files already are that commit). Raises GitError."""
    if not snap.uncommitted:
        return
    g.git(["update-ref", "-m", "zapcli: the uncommitted work of the tree", f"refs/heads/{branch}",
           snap.commit, snap.head], where)
    g.git(["reset", "-q"], where)
