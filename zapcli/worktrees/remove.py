"""Removing a tree: through `git worktree remove` only, never `rm -rf` —
except the folder of a tree whose repository no longer exists (git has
nothing left to ask), and only when forced.

Imports `zapcli.worktrees.git`, `zapcli.worktrees.create` (its per-repository
lock), `zapcli.worktrees.inspect`, `zapcli.worktrees.objects` (what its sandbox
wrote is brought in first), `zapcli.worktrees.fence` (a fenced branch
becomes a plain ref again before anything is decided about it). A tree is
removed without `force` only when its admin files agree with the receipt:
git's own check runs `git status` in the tree. Without `force`, git itself refuses a
tree with changes or untracked files — a second guard behind the caller's
checks. The branch goes too when every commit of it is on another branch or
remote (merged, or nothing beyond its base), or `zapcli merge --squash`
took it as it is (its commits then stay reachable from
`refs/zapcli/squashed/<branch>`, C28), or its tip's tree is one the caller
names as already kept (`same_as`: `pick`'s picked work — the content is all
there, so nothing is lost); otherwise it is kept and the caller says so.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.plain import plain
from zapcli.plain import replace as plain_replace
from zapcli.worktrees import git as g
from zapcli.worktrees import objects
from zapcli.worktrees.create import _locked
from zapcli.worktrees.fence import disarm
from zapcli.worktrees.inspect import TreeState


@plain
class Removed:
    tree: bool  # the tree was removed
    branch: bool  # its branch was deleted too
    note: str = ""  # why the branch was deleted or kept, or what git said


def remove(r: g.Receipt, st: TreeState, *, force: bool = False,
           same_as: dict[str, str] | None = None) -> Removed:
    """Remove the tree of `r` (whose state is `st`). `same_as`: tree ids whose
    content is kept elsewhere -> whose it is; a branch whose tip has one of
    them goes even with commits of its own (checked under the lock). Raises
    GitError with git's message when git refuses or fails; nothing else is
    tried then."""
    if r.repo_gone:
        if not force:
            raise g.GitError(f"its repository {r.repo} no longer exists, so git cannot remove "
                             "the tree; --force deletes its folder")
        import shutil

        shutil.rmtree(r.path, ignore_errors=True)
        return Removed(not Path(r.path).exists(), False,
                       f"its repository {r.repo} no longer exists: the folder was deleted")
    co = r.checkout()
    with _locked(r):
        try:
            objects.bring_in(r)  # what its sandbox wrote: its branch may be kept below
        except (g.GitError, OSError) as exc:
            if not force:
                raise g.GitError(f"the objects its sandbox wrote could not be brought into the "
                                 f"repository ({getattr(exc, 'message', exc)}); --force removes "
                                 "the tree without them") from None
        co = plain_replace(co, objects="")  # its own folder goes below
        if Path(r.path).exists():
            if not force:  # git's own check runs `git status` there, through its .git file
                r.tree()
            g.git(["worktree", "remove", *(["--force"] if force else []), r.path], co)
        else:
            g.git(["worktree", "prune"], co, check=False)
        disarm(r)  # its branch a plain ref again, kept or deleted below
        objects.remove(r.common_dir, r.branch)
        if not g.branch_exists(co, r.branch):
            return Removed(True, False)
        twin = _same_work(co, r.branch, same_as) if st.kept_commits and not st.error else ""
        if (st.kept_commits or st.error) and not twin:  # a merged branch goes: its commits are on another
            why = (f"{st.kept_commits} commit(s) on no other branch" if st.kept_commits
                   else "its commits could not be checked")
            return Removed(True, False, f"branch {r.branch} kept: {why}")
        keep = f"refs/zapcli/squashed/{r.branch}"
        if st.squashed:  # its own commits stay reachable (C28): a ref outside the branch list
            g.git(["update-ref", "-m", f"zapcli: {r.branch} was squash-merged", keep, r.branch],
                  co, check=False)
        proc = g.git(["branch", "-D", r.branch], co, check=False)
        if proc.returncode != 0:
            return Removed(True, False, f"branch {r.branch} kept: {g._message(proc)}")
    why = (twin if twin else
           f"squash-merged by zapcli merge; its own commits stay at {keep}" if st.squashed else
           "merged: its commits are on another branch" if st.beyond_base else "nothing beyond its base")
    return Removed(True, True, why)


def _same_work(co: g.Place, branch: str, same_as: dict[str, str] | None) -> str:
    """Why `branch` may go though it has commits of its own — its tip's tree
    is one of `same_as` (the same files, byte for byte) — or ""."""
    if not same_as:
        return ""
    proc = g.git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{tree}}"], co, check=False)
    tree = proc.stdout.strip() if proc.returncode == 0 else ""
    return f"the same work as {same_as[tree]}, tree {tree[:12]}" if tree in same_as else ""
