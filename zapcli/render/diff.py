"""`diff`, the diff stat `attempts` shows, and the stale-base note that
`poll`, `attempts` and `merge` share."""

from __future__ import annotations

from zapcli.render.common import Lines
from zapcli.render.docschema import stamp
from zapcli.render.text import alt, escape_controls, git_quoted

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

STATUS_WORD = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied",
               "T": "type changed"}
STAT_WIDTH = 40  # the widest +/- bar


def stat_words(stat: dict[str, int] | None) -> str:
    """`3 files changed, 10 insertions(+), 2 deletions(-)` (git's words)."""
    if not stat:
        return "no diff"
    if not stat.get("files"):
        return "no changes"
    n = stat["files"]
    return (f"{n} file{'s' if n != 1 else ''} changed, {stat['insertions']} insertion"
            f"{'s' if stat['insertions'] != 1 else ''}(+), {stat['deletions']} deletion"
            f"{'s' if stat['deletions'] != 1 else ''}(-)")


def _source(res: Any) -> str:
    where = ("its tree, uncommitted work included" if res.uncommitted else "its tree") \
        if res.source == "tree" else f"its branch (the tree {res.path} is gone)"
    return f"[SubAgent] {res.id}: {res.branch} against its base {res.base[:12]}, from {where}"


def _stat_lines(files: list[Any]) -> Lines:
    widest = max((f.added or 0) + (f.deleted or 0) for f in files) or 1
    name_width = min(max(len(git_quoted(f.path)) for f in files), 60)
    out: Lines = []
    for f in files:  # names as git prints them: one name, one line
        name = git_quoted(f.path) if f.old_path is None else \
            f"{git_quoted(f.old_path)} => {git_quoted(f.path)}"
        if f.added is None:
            out.append(("", f" {name:<{name_width}} | Bin"))
            continue
        total = f.added + f.deleted
        scale = min(1.0, STAT_WIDTH / widest)
        plus, minus = round(f.added * scale), round(f.deleted * scale)
        out.append(("", f" {name:<{name_width}} | {total:>4} " + "+" * plus + "-" * minus))
    return out


def _patch_lines(patch: str) -> Lines:
    out: Lines = []
    for line in patch.rstrip("\n").split("\n"):
        style = ("bold" if line.startswith(("diff --git", "+++ ", "--- ")) else
                 "cyan" if line.startswith("@@") else "green" if line.startswith("+") else
                 "red" if line.startswith("-") else "")
        out.append((style, escape_controls(line)))
    return out


def head(res: Any) -> Lines:
    """What is said about the answer: where it comes from, and that there
    is no change (the command says it on stderr; git's own options print
    nothing then)."""
    out: Lines = [("dim", _source(res))]
    return out if res.changes.files else out + [("", "no changes")]


def body(res: Any) -> Lines:
    """Only what git's own option prints: the patch, the stat, or one file
    name a line, quoted as git quotes an unusual one (the command's stdout,
    for `| xargs` or `| git apply`)."""
    files = res.changes.files
    if not files:
        return []
    if res.mode == "name-only":
        return [("", git_quoted(f.path)) for f in files]  # as git prints them
    if res.mode == "stat":
        return _stat_lines(files) + [("", " " + stat_words(res.changes.stat()))]
    return _patch_lines(res.changes.patch or "")


def lines(res: Any) -> Lines:
    """Both, in one text (a tool call's answer, which has no stderr)."""
    return head(res) + body(res)


def doc(res: Any) -> dict[str, Any]:
    return stamp("diff", {"id": res.id, "mode": res.mode, "branch": res.branch, "base": res.base,
            "path": res.path, "commit": res.commit, "source": res.source,
            "uncommitted": res.uncommitted, "stat": res.changes.stat(),
            "files": [f.to_dict() for f in res.changes.files], "patch": res.changes.patch})


def stale_line(note: dict[str, Any] | None, sid: str) -> tuple[str, str] | None:
    """The stale-base note as one line, or None when the branch has not moved."""
    if not note or not note.get("base_moved"):
        return None
    branch = note.get("checkout_branch") or "a detached HEAD"
    count = note.get("commits_since_base") or 0
    moved = f"{count} commit{'s' if count != 1 else ''}" if count else "elsewhere"
    head = (f"Note: the checkout's HEAD moved since the base ({branch}: {moved}, now "
            f"{str(note.get('workspace_head'))[:12]})")
    if note.get("already_merged"):
        return "dim", f"{head}; it holds this work already (merged): nothing left to merge"
    if note.get("merges_cleanly") is True:
        return "yellow", f"{head}; the work still merges cleanly ({alt('zapcli merge ' + sid, 'action merge')})"
    if note.get("merges_cleanly") is False:
        files = escape_controls(", ".join(note.get("conflicts") or []))
        return "red", f"{head}; merging now would conflict in {files}: merge or rebase by hand"
    return "yellow", f"{head}: merge or rebase this branch"
