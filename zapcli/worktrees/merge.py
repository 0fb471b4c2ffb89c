"""Merging a tree's work into a checkout's current branch, the git side.

Imports `zapcli.worktrees.git`, `zapcli.worktrees.snapshot`,
`zapcli.worktrees.move`. Everything is
decided before the checkout is touched: the merge is computed in git's
object store (`git merge-tree --write-tree`, git 2.38+), the commit made
with `commit-tree`, and the checkout then only moves forward to it with
`git merge --ff-only`, which refuses — changing nothing — if a local change
would be overwritten; `move` makes that step whole or undone, even when the
merge is killed. A refusal (`Refused`) names the files; nothing on
either side is lost. `--rebase` replays the branch in the subagent's own
tree (its work is over), never in the checkout.
"""

from __future__ import annotations

import os

from zapcli.plain import frozen, plain
from zapcli.worktrees import git as g
from zapcli.worktrees.snapshot import IDENTITY, commit_tree

HOW = ("merge", "squash", "rebase")


class Refused(Exception):
    """The merge would conflict, or would touch uncommitted changes, or the
    checkout is not in a state to merge into. `files`: the paths involved."""

    def __init__(self, message: str, files: list[str] | None = None, code: str = "refused"):
        super().__init__(message)
        self.message, self.files, self.code = message, list(files or []), code


BUSY = {"MERGE_HEAD": "a merge", "rebase-merge": "a rebase", "rebase-apply": "a rebase",
        "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert", "BISECT_LOG": "a bisect"}


@frozen
class Checkout:
    repo: str
    branch: str | None  # its current branch (short name); None when HEAD is detached
    head: str
    tree: str = ""  # HEAD's tree
    busy: str | None = None  # what it is in the middle of: a merge, a rebase, ...
    place: g.Place | None = None  # where git runs on it


def checkout(place: g.Place) -> Checkout:
    """The checkout's current branch, commit and tree, and what it is in the
    middle of — one git call. Raises GitError."""
    repo = place.work_tree
    args = ["rev-parse", "HEAD", "HEAD^{tree}", "--symbolic-full-name", "HEAD",
            *[x for name in BUSY for x in ("--git-path", name)]]
    out = g.git(args, place, timeout=20).stdout.split("\n")
    ref = out[2].strip() if len(out) > 2 else ""
    busy = None
    for name, path in zip(BUSY, out[3:], strict=False):
        if path and os.path.exists(path if os.path.isabs(path) else os.path.join(repo, path)):
            busy = BUSY[name]
            break
    return Checkout(repo, ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else None,
                    out[0].strip(), out[1].strip(), busy, place)


def _at(co: Checkout) -> g.Place:
    assert co.place is not None
    return co.place


def merge_tree(where: g.Place, ours: str, theirs: str) -> tuple[str | None, list[str]]:
    """(the merged tree, []) or (None, the conflicting files), from the object
    store alone. Raises GitError (e.g. a git older than 2.38, or a file whose
    attributes name a custom merge driver, which zapcli does not run)."""
    proc = g.git(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs],
                 where, check=False)
    if proc.returncode not in (0, 1):
        message = g._message(proc)
        if "internal merge" in message or "cannot run" in message:
            message += ("; a file's .gitattributes names a custom merge driver (merge.<name>."
                        "driver), which zapcli never runs: merge this one by hand")
        raise g.GitError(message, proc.returncode)
    parts = [p for p in proc.stdout.split("\0") if p]
    if proc.returncode == 0:
        return parts[0], []
    return None, sorted(dict.fromkeys(parts[1:]))


def is_ancestor(where: g.Place, older: str, newer: str) -> bool:
    return g.git(["merge-base", "--is-ancestor", older, newer], where, check=False).returncode == 0


LISTED = 2000  # commits `ancestry` walks at most


@plain
class Ancestry:
    """How the checkout's HEAD and the work stand to each other and to the
    tree's base (`ancestry`): `since_base`, the commits on HEAD since the base
    (`git rev-list --count BASE..HEAD`); `descends`, HEAD is an ancestor of the
    work (the merge is a fast-forward). None: the listing cannot tell (git is asked: `is_ancestor`, and
    `zapcli.worktrees.stale.note` counts)."""

    since_base: int | None = None
    descends: bool | None = None


def ancestry(where: g.Place, base: str, head: str, work: str) -> Ancestry:
    """`Ancestry` from one `git rev-list --parents HEAD WORK --not BASE` (what
    a count of HEAD's commits since the base and `merge-base --is-ancestor`
    asked in two): the commits either has that the base has not, each with
    its parents, walked here. A commit the base does not have is reachable
    from another only through commits the base does not have either, so the
    walk inside the listing answers for HEAD and the work when they are in
    it; one the base has (HEAD put back before the base) is not: None, and
    git is asked. git failing (a base gone), or more than `LISTED` commits
    (a base far behind: git counts faster than this walk), tells nothing."""
    proc = g.git(["rev-list", "--parents", f"--max-count={LISTED}", head, work, "--not", base],
                 where, check=False, timeout=20)
    lines = [line.split() for line in proc.stdout.split("\n") if line.strip()]
    if proc.returncode != 0 or len(lines) >= LISTED:
        return Ancestry()
    parents = {ids[0]: ids[1:] for ids in lines}

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start] if start in parents else []
        while todo:
            commit = todo.pop()
            if commit not in seen:
                seen.add(commit)
                todo.extend(p for p in parents[commit] if p in parents)
        return seen

    from_head = reach(head)
    return Ancestry(len(from_head), head in reach(work) if head in parents else None)


def touched(where: g.Place, head: str, tree: str) -> list[str]:
    """The paths the checkout's files change in when it moves from `head` to `tree`."""
    out = g.git(["diff-tree", "-r", "--name-only", "--no-renames", "-z", head, tree], where).stdout
    return [p for p in out.split("\0") if p]


MAX_PATHSPECS = 500  # more touched paths than this: one status of the whole checkout


def uncommitted(where: g.Place, paths: list[str]) -> list[str]:
    """Which of `paths` hold uncommitted changes (staged, unstaged or an
    untracked file in the way) in the checkout."""
    if not paths:
        return []
    wanted = set(paths)
    spec = ["--", *[f":(literal){p}" for p in paths]] if len(paths) <= MAX_PATHSPECS else []
    out = g.git(["status", "--porcelain=v1", "-z", "--untracked-files=all",
                 "--ignore-submodules=all", *spec], where).stdout
    found, entries = [], iter(out.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        if entry[0] in "RC":  # a rename or copy names its source next
            source = next(entries, "")
            if source in wanted:
                found.append(source)
        if entry[3:] in wanted:
            found.append(entry[3:])
    return sorted(dict.fromkeys(found))


@plain
class Plan:
    """A merge decided: `commit` is what the checkout moves to."""

    how: str  # fast-forward | merge | squash | rebase
    commit: str


def plan(co: Checkout, source: str, how: str, message: str, *, moved: bool = True,
         merged: tuple[str | None, list[str]] | None = None,
         known: Ancestry | None = None) -> Plan:
    """The commit the checkout will move to, or Refused (a conflict, nothing to
    merge). `moved`: the checkout's branch is no longer the tree's base (if it
    is, the work descends from it: a fast-forward); `merged`: merge_tree's
    answer when the caller has it already; `known`: `ancestry`'s. For
    `rebase` the commit is the work's; `rebase_in_tree` makes the real one."""
    if not moved:  # the work descends from the checkout's HEAD: nothing to work out
        if source == co.head:
            raise Refused(f"nothing to merge: {co.branch or 'HEAD'} already has all of it",
                          code="up_to_date")
        if how == "squash":
            return Plan("squash", commit_tree(_at(co), f"{source}^{{tree}}", [co.head], message))
        return Plan("rebase" if how == "rebase" else "fast-forward", source)
    tree, conflicts = merged if merged is not None else merge_tree(_at(co), co.head, source)
    if tree is None:
        raise Refused(f"merging would conflict in {len(conflicts)} file(s): "
                      f"{', '.join(conflicts[:20])}", conflicts, code="conflict")
    if tree == co.tree:  # merged, squashed earlier or made by hand: a merge would change no file
        raise Refused(f"nothing to merge: {co.branch or 'HEAD'} already has all of it",
                      code="up_to_date")
    known = known or Ancestry()
    if how == "squash":
        return Plan("squash", commit_tree(_at(co), tree, [co.head], message))
    if how == "rebase":
        return Plan("rebase", source)
    if is_ancestor(_at(co), co.head, source) if known.descends is None else known.descends:
        return Plan("fast-forward", source)
    return Plan("merge", commit_tree(_at(co), tree, [co.head, source], message))


def by_hand(r: g.Receipt, uncommitted: bool) -> str:
    """How to settle a conflict by hand: git merges only what the branch
    holds, so work left `uncommitted` in the tree is committed there first."""
    import shlex

    first = (f"commit its work in its tree (cd {shlex.quote(r.path)} && git add -A && git "
             "commit), then " if uncommitted else "")
    return (f". To settle it by hand, {first}run git merge {r.branch} in {r.repo} and resolve "
            "the conflicts there")


def in_the_way(co: Checkout, tree: str) -> None:
    """Refused when the checkout has uncommitted changes in the paths a move
    to `tree` would change (before a rebase rewrites the branch; otherwise
    `fast_forward` is the check)."""
    dirty = uncommitted(_at(co), touched(_at(co), co.head, tree))
    if dirty:
        raise Refused(_dirty_words(co.repo, dirty), dirty, code="dirty")


def _dirty_words(repo: str, files: list[str]) -> str:
    return (f"the checkout {repo} has uncommitted changes in {len(files)} file(s) the merge "
            f"would change: {', '.join(files[:20])}; commit or stash them first")


def rebase_in_tree(where: g.Place, onto: str) -> str:
    """Replay the tree's branch onto `onto` in the tree itself; the new tip.
    A conflict aborts the rebase (the branch is as it was) and is Refused."""
    proc = g.git(["rebase", "-q", "--no-autostash", onto], where, check=False, env=_identity(where))
    if proc.returncode != 0:
        text = (proc.stdout or "") + (proc.stderr or "")
        files = [line.rsplit(" in ", 1)[-1].strip() for line in text.split("\n")
                 if line.startswith("CONFLICT") and " in " in line]
        g.git(["rebase", "--abort"], where, check=False)
        raise Refused(f"rebasing would conflict in {', '.join(files) or 'its commits'}: the "
                      "branch is left as it was", files, code="conflict")
    return g.git(["rev-parse", "HEAD"], where).stdout.strip()


def _identity(where: g.Place) -> dict[str, str]:
    """zapcli's name for the rebased commits' committer, only when git knows none."""
    known = g.git(["var", "GIT_COMMITTER_IDENT"], where, check=False).returncode == 0
    return {} if known else IDENTITY


def fast_forward(co: Checkout, commit: str, diff: dict[str, list[str]] | None = None,
                 owner: dict[str, str] | None = None) -> None:
    """Move the checkout's branch, index and files to `commit`, whole or not
    at all (`zapcli.worktrees.move`). git refuses, changing nothing, when an
    uncommitted change (or an untracked file) is in the way of a path it
    changes: Refused, naming the files. `diff`: the paths from HEAD to
    `commit` by kind (`move.changes`), when the caller has them; `owner`:
    whose merge it is (`move.forward`)."""
    from zapcli.worktrees import move

    where = _at(co)
    repo = where.work_tree
    try:
        proc = move.forward(where, f"refs/heads/{co.branch}", co.head, commit, diff, owner)
    except move.Busy as exc:
        raise Refused(str(exc), code="busy") from None
    except move.Killed as exc:
        raise Refused(f"git was killed (signal {exc.signum}) while it moved the checkout "
                      f"{repo}; {exc.said}; run the merge again", code="killed") from None
    if proc is None:
        return
    text = proc.stderr or proc.stdout or ""
    files = sorted(dict.fromkeys(line.strip() for line in text.split("\n") if line.startswith("\t")))
    if files:
        raise Refused(_dirty_words(repo, files), files, code="dirty")
    raise Refused(f"git refused to update the checkout {repo}: {g._message(proc)}")
