"""What changed between two commits, for `zapcli diff` and `attempts`:
every file with its status and line counts, and the patch when asked.

Imports `zapcli.worktrees.git`. One `git diff --raw --numstat -z` gives
both the statuses and the counts (renames found, `-M`); paths come NUL-
separated, so any file name is read as it is.
"""

from __future__ import annotations

from zapcli.plain import field, plain
from zapcli.worktrees import git as g

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


@plain
class FileChange:
    path: str
    status: str  # A added, M modified, D deleted, R renamed, C copied, T type changed
    added: int | None = None  # lines; None for a binary file
    deleted: int | None = None
    old_path: str | None = None  # a rename's or copy's source

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "added": self.added,
                "deleted": self.deleted, "old_path": self.old_path}


@plain
class Changes:
    files: list[FileChange] = field(default_factory=list)
    patch: str | None = None

    @property
    def insertions(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(f.deleted or 0 for f in self.files)

    def stat(self) -> dict[str, int]:
        return {"files": len(self.files), "insertions": self.insertions,
                "deletions": self.deletions}


def _parse(out: str) -> list[FileChange]:
    parts = out.split("\0")
    files: list[FileChange] = []
    counts: list[tuple[int | None, int | None]] = []
    i = 0
    while i < len(parts):
        item = parts[i]
        i += 1
        if item.startswith(":"):  # raw: ":old new sha sha STATUS", then the path(s)
            status = item.split()[-1]
            if status[:1] in "RC":
                files.append(FileChange(parts[i + 1], status[0], old_path=parts[i]))
                i += 2
            else:
                files.append(FileChange(parts[i], status[:1]))
                i += 1
        elif "\t" in item:  # numstat: "added\tdeleted\tpath" (a rename: the paths follow)
            added, deleted, path = item.split("\t", 2)
            counts.append((int(added) if added.isdigit() else None,
                           int(deleted) if deleted.isdigit() else None))
            if not path:
                i += 2
    for f, (n_added, n_deleted) in zip(files, counts, strict=False):
        f.added, f.deleted = n_added, n_deleted
    return files


def changes(where: g.Place, base: str, commit: str, *, patch: bool = False) -> Changes:
    """The files changed from `base` to `commit` (and the patch). Raises GitError."""
    out = g.git(["diff", "--no-color", "-M", "--raw", "--numstat", "-z", base, commit, "--"],
                where).stdout
    found = Changes(_parse(out))
    if patch and found.files:
        found.patch = g.git(["diff", "--no-color", "-M", base, commit, "--"], where).stdout
    return found
