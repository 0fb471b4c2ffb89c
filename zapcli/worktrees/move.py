"""Moving a checkout to a merge's commit whole or not at all, and putting
right a move that was stopped halfway.

Imports `zapcli.worktrees.git`, `zapcli.beneath`, `zapcli.stdjson`. The commit is decided in
git's object store before (`zapcli.worktrees.merge`); what is left is git's
own fast-forward of the checkout (files, index, then the branch). Three
things make it whole:

- a journal, `zapcli-merge.json` in the checkout's git dir, written (and
  synced) before git starts: the commit the checkout was at, the one it
  moves to, and the paths that differ between them. It is locked (`flock`)
  by zapcli and by the git it starts — the lock is free only when both are
  gone — and removed when the move is over;
- that git runs in a session of its own, its output to files: a Ctrl-C or
  a SIGKILL to zapcli's process group, or zapcli's death, does not stop it
  halfway (the caller holds its own interrupts until git is done);
- `recover()`, run by the merge itself when it finds its git killed (a
  signal is not an answer), else before the next merge into that checkout:
  a journal no one holds means a git killed halfway (the OOM killer, a kill -9 of that
  pid). If the branch still points where it was, the paths the move touched
  are put back (index and files) as they were; if it points at the new
  commit, they are put where the commit has them. A stale `index.lock` the
  killed git left is removed. It says which.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import subprocess
import time
from pathlib import Path

from zapcli import stdjson
from zapcli.worktrees import git as g

JOURNAL = "zapcli-merge.json"


class Busy(Exception):
    """Another zapcli merge is moving this checkout now."""


class Killed(Exception):
    """git was killed while it moved the checkout, which was then put right
    (`said`: how, in `recover`'s words)."""

    def __init__(self, said: str, signum: int):
        super().__init__(said)
        self.said, self.signum = said, signum


def journal_path(place: g.Place) -> Path:
    return Path(place.git_dir, JOURNAL)


def changes(place: g.Place, old: str, new: str) -> tuple[list[str], dict[str, list[str]]]:
    """The paths that differ between commits (or trees) `old` and `new`, in
    git's order, and the same paths by kind (added, deleted, changed): one
    `git diff-tree`, for the merge's checks and for the journal alike."""
    out = g.git(["diff-tree", "-r", "--no-renames", "-z", "--name-status", old, new],
                place).stdout.split("\0")
    paths: list[str] = []
    added: list[str] = []
    deleted: list[str] = []
    changed: list[str] = []
    for status, path in zip(out[0::2], out[1::2], strict=False):
        if not path:
            continue
        paths.append(path)
        (added if status == "A" else deleted if status == "D" else changed).append(path)
    return paths, {"added": added, "deleted": deleted, "changed": changed}


def forward(place: g.Place, ref: str, old: str, new: str,
            diff: dict[str, list[str]] | None = None,
            owner: dict[str, str] | None = None) -> subprocess.CompletedProcess[str] | None:
    """Move the checkout (its branch `ref`, index and files) from `old` to
    `new` with git's fast-forward, which refuses — changing nothing — when an
    uncommitted change is in the way: then git's answer, else
    None. `diff`: `changes(place, old, new)[1]` when the caller has it;
    `owner`: whose move it is (kept in the journal, for `recover`).
    Raises GitError when git cannot run, Busy when another merge holds
    the journal."""
    path = journal_path(place)
    record = {"pid": os.getpid(), "started": time.time(), "ref": ref, "from": old, "to": new,
              **(diff if diff is not None else changes(place, old, new)[1]),
              **({"owner": owner} if owner else {})}
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another zapcli merge is moving the checkout {place.work_tree} now; "
                       "try again when it is done") from None
        os.ftruncate(fd, 0)
        os.write(fd, stdjson.dumps(record).encode())
        os.fsync(fd)
        # git keeps the journal's lock while it lives, in a session of its own
        proc = g.git(["merge", "--ff-only", "-q", "--no-stat", new], place, check=False,
                     alone=True, keep_fds=(fd,))
        if proc.returncode >= 0:
            path.unlink(missing_ok=True)  # done, or refused having changed nothing
            return None if proc.returncode == 0 else proc
    finally:
        os.close(fd)
    # git was killed (a signal, not an answer): it may have stopped halfway.
    # The journal stays until the move is put right — here, or by the next
    # merge if this process dies first.
    fixed = recover(place)
    if fixed is not None and fixed.state == "finished":
        return None
    raise Killed(fixed.how if fixed is not None else "look at `git status` there",
                 -proc.returncode)


class Recovered:
    """A move put right: what was done, in words; `state` "finished" (the
    branch had reached the move's commit), "back" (put back as it was) or
    "moved" (the branch moved since: left alone); and when finished, whose
    move it was (`forward`'s owner) and the commits it went from and to."""

    def __init__(self, said: str, how: str, state: str,
                 finished: tuple[dict[str, str], str, str] | None = None):
        self.said, self.how, self.state, self.finished = said, how, state, finished


def recover(place: g.Place) -> Recovered | None:
    """Put right a move of this checkout that a killed git left halfway
    (None when there was nothing to do). Raises Busy when a merge is moving
    it now, GitError when git cannot."""
    path = journal_path(place)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another zapcli merge is moving the checkout {place.work_tree} now; "
                       "try again when it is done") from None
        try:
            record = stdjson.loads((os.read(fd, 1 << 24) or b"{}").decode())
            ref, old, new = str(record["ref"]), str(record["from"]), str(record["to"])
            lists = {k: [str(p) for p in record.get(k) or []] for k in ("added", "deleted", "changed")}
        except (ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)  # written in part: git had not started
            return None
        locked = _stale_lock(place, float(record.get("started") or 0))
        now = g.git(["rev-parse", "--verify", "-q", ref], place, check=False).stdout.strip()
        owner = record.get("owner") if isinstance(record.get("owner"), dict) else None
        finished = None
        if now == new:
            _put(place, new, lists, gone=lists["deleted"])
            said, state = "it had moved the branch, so its move of the files was finished", "finished"
            finished = ({str(k): str(v) for k, v in owner.items()}, old, new) if owner else None
        elif now == old and not locked and not _indexed(place, old, lists):
            # git never wrote a file: it writes them holding index.lock, then the
            # index; neither is there. Files changed since are the person's: left be.
            said, state = "git had not changed it yet: the checkout is as it was", "back"
        elif now == old:
            _put(place, old, lists, gone=lists["added"])
            said, state = "the checkout was put back exactly as it was", "back"
        else:
            state = "moved"
            said = (f"the branch {ref} has moved since ({now[:12] or 'gone'}): look at "
                    "`git status` there")
        path.unlink(missing_ok=True)
        return Recovered(f"an earlier zapcli merge into {place.work_tree} was stopped while git "
                         f"moved the checkout ({old[:12]} to {new[:12]}); {said}", said, state, finished)
    finally:
        os.close(fd)


def _stale_lock(place: g.Place, started: float) -> bool:
    """Remove the `index.lock` the killed git left (made after the journal,
    and no git of that merge lives: its lock was free); whether there was one."""
    lock = Path(place.git_dir, "index.lock")
    with contextlib.suppress(FileNotFoundError):
        if lock.stat().st_mtime >= started - 1:
            lock.unlink()
            return True
    return False


def _indexed(place: g.Place, old: str, lists: dict[str, list[str]]) -> bool:
    """Whether the index has any path of the move other than as commit `old`
    has it (git wrote its new index: the move had reached the files)."""
    differ = g.git(["diff-index", "--cached", "-z", "--name-only", "--no-renames", old],
                   place).stdout.split("\0")
    touched = {p for k in ("added", "deleted", "changed") for p in lists[k]}
    return any(p in touched for p in differ if p)


def _put(place: g.Place, commit: str, lists: dict[str, list[str]], *, gone: list[str]) -> None:
    """The paths the move touched, in the index and the files, as `commit`
    has them: files it has not are removed first (through no link), then
    the index is reset for every path and the files written from it."""
    everything = [p for k in ("added", "deleted", "changed") for p in lists[k]]
    if not everything:
        return
    _remove(place.work_tree, gone)
    literal = {"GIT_LITERAL_PATHSPECS": "1"}
    g.git(["reset", "-q", "--no-refresh", commit, "--pathspec-from-file=-", "--pathspec-file-nul"],
          place, env=literal, input="\0".join(everything))
    present = [p for p in everything if p not in set(gone)]
    if present:
        g.git(["checkout-index", "-f", "-z", "--stdin"], place, input="\0".join(present))


def _remove(top: str, paths: list[str]) -> None:
    """Remove each file (and the folders left empty) beneath `top`, through no link."""
    from zapcli.beneath import open_beneath

    root = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in paths:
            parent, _, name = rel.rpartition("/")
            try:
                fd = open_beneath(root, parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue  # no such folder (or a link in the way): nothing of ours there
            try:
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    os.unlink(name, dir_fd=fd)
            finally:
                os.close(fd)
            while parent:  # the folders the work made, now empty
                up, _, leaf = parent.rpartition("/")
                try:
                    fd = open_beneath(root, up, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError:
                    break
                try:
                    os.rmdir(leaf, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.ENOENT):
                        break
                    raise
                finally:
                    os.close(fd)
                parent = up
    finally:
        os.close(root)

