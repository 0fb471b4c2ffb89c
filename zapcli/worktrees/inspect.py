"""What a tree holds: uncommitted changes, untracked files, commits on no
other branch. Imports `zapcli.worktrees.git` (git runs on the tree's
checked place, `Receipt.tree()`).

Untracked files count as work (a draft nobody added yet is still someone's
work); ignored files do not (git's own `worktree remove` drops them too).
A commit is safe when another branch or a remote-tracking ref has it.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.plain import plain
from zapcli.worktrees import git as g

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


@plain
class TreeState:
    exists: bool
    modified: int = 0  # tracked files changed, staged or not
    untracked: int = 0
    unpushed: int = 0  # commits of the tree's HEAD and branch on no other branch or remote
    beyond_base: int = 0  # commits on the branch past its base
    head: str | None = None
    error: str | None = None  # git could not tell: treated as holding work
    tip: str | None = None  # the branch's commit, while it exists
    squashed: bool = False  # `zapcli merge --squash` took the branch as it is (its commits, squashed, are on the checkout's branch)

    @property
    def kept_commits(self) -> int:
        """Commits only this branch holds: its unpushed ones, unless squash-merged."""
        return 0 if self.squashed else self.unpushed

    @property
    def holds_work(self) -> bool:
        return bool(self.modified or self.untracked or self.kept_commits or self.error)

    @property
    def label(self) -> str:
        """clean | dirty | unpushed | missing | unknown."""
        if not self.exists:
            return "missing"
        if self.error:
            return "unknown"
        if self.modified or self.untracked:
            return "dirty"
        if self.squashed:
            return "merged"
        return "unpushed" if self.unpushed else "clean"

    def reasons(self) -> list[str]:
        """Why the tree holds work, in words: "1 untracked file", ..."""
        out = []
        for n, what in ((self.modified, "modified file"), (self.untracked, "untracked file")):
            if n:
                out.append(f"{n} {what}{'s' if n != 1 else ''}")
        if self.kept_commits:
            out.append(f"{self.unpushed} unpushed commit{'s' if self.unpushed != 1 else ''} "
                       "(on no other branch)")
        if self.error:
            out.append(f"git could not tell ({self.error})")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.label, "exists": self.exists, "modified": self.modified,
                "untracked": self.untracked, "unpushed": self.unpushed,
                "beyond_base": self.beyond_base, "head": self.head, "error": self.error,
                "squashed": self.squashed,
                "holds_work": self.holds_work and self.exists, "reasons": self.reasons()}


def state(r: g.Receipt) -> TreeState:
    """The state of the tree of `r` (for a tree deleted by hand: of its branch).
    A tree whose admin files no longer agree with `r` is "git could not tell"
    (it holds work as far as anyone removing trees is concerned)."""
    st = TreeState(exists=Path(r.path).is_dir())
    if r.repo_gone:
        st.error = f"its repository {r.repo} no longer exists"
        return st
    try:
        where = r.tree() if st.exists else r.checkout()
        if st.exists:
            _changes(st, where)
            st.head = g.git(["rev-parse", "HEAD"], where).stdout.strip()
        found = g.git(["rev-parse", "--verify", "--quiet", f"refs/heads/{r.branch}"], where, check=False)
        has_branch = found.returncode == 0
        st.tip = found.stdout.strip() or None if has_branch else None
        tips = (["HEAD"] if st.exists else []) + ([f"refs/heads/{r.branch}"] if has_branch else [])
        if tips:
            count = g.git(["rev-list", "--count", *tips, "--not", f"--exclude={r.branch}",
                           "--branches", "--remotes"], where)
            st.unpushed = int(count.stdout.strip() or 0)
        if r.base and has_branch:
            beyond = g.git(["rev-list", "--count", f"{r.base}..refs/heads/{r.branch}"], where,
                           check=False)
            st.beyond_base = int(beyond.stdout.strip() or 0) if beyond.returncode == 0 else 0
    except (g.GitError, ValueError) as exc:
        st.error = str(exc)[:500]
    return st


def _changes(st: TreeState, where: g.Place) -> None:
    status = g.git(["status", "--porcelain=v1", "-z", "--untracked-files=all",
                    "--ignore-submodules=all"], where)
    entries = iter(status.stdout.split("\0"))
    for entry in entries:
        if entry.startswith("??"):
            st.untracked += 1
        elif len(entry) > 3:
            st.modified += 1
            if entry[0] in "RC":  # a rename or copy names its source next
                next(entries, None)
