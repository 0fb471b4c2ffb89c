"""A subagent's work in its tree, as one commit: what `diff`, `merge`,
`attempts` and the stale-base note of `poll` look at (docs/explanation/rules.md#parallel-coding, #23);
the message of a squash commit of it (`squash_message`).

Imports `zapcli.worktrees`, `zapcli.lifecycle.observe`, `zapcli.trail`.
The work is the tree's snapshot (committed and uncommitted work alike) when
the tree exists, else its branch (a tree removed by hand, or by `worktree
rm` after a merge); a subagent whose tree was never made has none.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.errors import NotFound, ZapcliError
from zapcli.lifecycle.observe import load
from zapcli.plain import plain
from zapcli.redact import display
from zapcli.trail import reader, store
from zapcli.worktrees import git as g
from zapcli.worktrees.snapshot import Snapshot, take

SQUASH_LOG_MAX = 50  # commits listed in a squash commit's message


@plain
class Work:
    sid: str
    summary: reader.Summary
    receipt: g.Receipt
    commit: str | None = None  # the work: the snapshot, else the branch's tip; None: nothing left
    snap: Snapshot | None = None  # when the tree exists
    missing: str | None = None  # why there is no work to look at

    @property
    def tree_exists(self) -> bool:
        return self.snap is not None


def subject(summary: reader.Summary, limit: int = 72) -> str:
    """A commit subject from the subagent's task: its first line, cut."""
    first = display(summary.spawn.task).strip().split("\n")[0].strip() or "work of a subagent"
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def squash_message(sid: str, s: reader.Summary, r: g.Receipt, at: g.Place, source: str,
                   snapshot: bool, most: int = SQUASH_LOG_MAX) -> str:
    """A squash commit's message as a person expects (what `git merge --squash`
    prepares): the branch's one commit's own message, or the task as the
    subject over the commits' subjects (at most `most` of them). `snapshot`:
    `source` is zapcli's commit of the work left uncommitted in the tree."""
    out = g.git(["log", "-z", "--format=%h %B", f"-{most + 2}", f"{r.base}..{source}"], at,
                check=False).stdout
    commits = [c.strip() for c in out.split("\0") if c.strip()]
    left = commits[0].partition(" ")[2] if snapshot and commits else None
    own = commits[1:] if snapshot else commits
    if len(own) == 1 and left is None and own[0].partition(" ")[2]:
        return own[0].partition(" ")[2] + "\n"  # its own message, as written
    if not own and left is not None:
        return left + "\n"  # only uncommitted work: the task, and that zapcli committed it
    log = [f"* {c.split(chr(10), 1)[0]}" for c in own[:most]]
    if len(own) > most:
        log.append("* … and older commits")
    if left is not None:
        log.insert(0, "* (the work left uncommitted in its tree, committed by zapcli)")
    listed = "\n".join(log)
    return f"{subject(s)}\n\nSquashed from branch {r.branch} (subagent {sid}):\n{listed}\n"


def receipt(sid: str) -> tuple[str, reader.Summary, g.Receipt]:
    """(full id, summary, tree receipt). Raises NotFound / ZapcliError for a
    subagent without a tree."""
    sid = store.resolve(sid)
    s = load(sid)
    r = g.Receipt.from_dict(s.spawn.worktree)
    if r is None:
        raise ZapcliError(f"{sid} has no worktree (it was not spawned with --worktree or "
                          "--attempts), so it has no branch to diff or merge", code="no_worktree")
    return sid, s, r


def of(sid: str, *, need: bool = True, refresh: bool = False,
       known: tuple[reader.Summary, g.Receipt] | None = None) -> Work:
    """The work of `sid`. With `need`, raises ZapcliError when there is none
    (the tree was never made, or it and its branch are gone). `refresh`: the
    subagent has finished, so looking may refresh its tree's index. `known`:
    its summary and receipt (`receipt`'s), when the caller has read them."""
    sid, s, r = (sid, *known) if known is not None else receipt(sid)
    work = Work(sid, s, r)
    if r.repo_gone:
        work.missing = f"its repository {r.repo} no longer exists"
    elif Path(r.path).is_dir() and (s.worktree or {}).get("ok"):
        message = (f"{subject(s)}\n\nThe work subagent {sid} left uncommitted in its tree "
                   f"(committed by zapcli).")
        try:
            work.snap = take(r.tree(), r.branch, message, refresh=refresh)
            work.commit = work.snap.commit
        except g.GitError as exc:
            work.missing = f"git could not read its tree {r.path}: {exc.message}"
    elif g.branch_exists(r.checkout(), r.branch):
        work.commit = g.git(["rev-parse", f"refs/heads/{r.branch}"], r.checkout()).stdout.strip()
    elif not (s.worktree or {}).get("ok"):
        work.missing = ("its tree was not made" + (f" ({s.worktree.get('error')})"
                        if s.worktree and s.worktree.get("error") else " yet"))
    else:
        work.missing = f"its tree {r.path} and its branch {r.branch} are both gone"
    if need and work.commit is None:
        raise ZapcliError(f"{sid} has no work to look at: {work.missing}", code="no_work")
    return work


def safe_of(sid: str, *, refresh: bool = False) -> Work | None:
    """`of` for a display that goes on without it (poll, attempts)."""
    try:
        return of(sid, need=False, refresh=refresh)
    except (NotFound, ZapcliError, g.GitError):
        return None
