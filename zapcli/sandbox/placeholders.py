"""Placeholders: what zapcli makes where a control file does not exist yet
(a folder's `.zapcli/`, `.envrc`, `opencode.json`, the `.git` of a folder
that is no repository), so the sandbox can hold that name read-only — a
mount needs something to mount on — and removes again once no sandbox uses
it. Imports the standard library, this room and `zapcli.control`.

What is made. A name a program reads as a file is held by a regular file
whose content that program reads as "nothing configured" (`{}` in
`opencode.json`, nothing in `.envrc`: `zapcli.sandbox.neutral`); programs
inside the sandbox and the user's own tools in the same folder during the
run read that one file, the same inside and out. Any other name (`.git`,
`.zapcli`, `.claude`, the missing `.vscode` of `.vscode/tasks.json`) is held
by an empty folder: git takes an empty `.git` folder for no repository (an
empty `.git` file breaks it), and a folder holds everything that could be
made inside it. Either can be neither written, removed, renamed over nor
made into something else inside the sandbox (a read-only mount point). An
empty folder is invisible to git, a file is not: git inside the sandbox is
made to pass over the held files (`zapcli.sandbox.git_exclude`); outside,
the user's `git status` lists them as untracked while a run lasts. That is
the price of the user's tools working meanwhile: git would pass over a
fifo or a socket, but a program reading one hangs or fails, and what would
make git ignore a file outside (`.gitignore`, `info/exclude`, the global
excludes) is the user's, which zapcli does not change.

Who removes what. Every sandbox that binds a control path read-only holds
a shared `flock` on it for its whole life; whoever ends last (its
exclusive lock granted at once) removes a placeholder that is still the
one that was made — still an empty folder, or a file still its neutral
content — so one that another sandbox, of this user or another, still
mounts is never removed under it (removing a mount point in another
namespace would unmount it there). Each placeholder made is recorded in a
folder of zapcli's state (`records`, one small file per sandbox start: the
paths, and for a file the inode and change time it had once written), so
one left by a runner killed with SIGKILL is removed by the next sandbox
that starts or by `zapcli gc` (`sweep`). One that holds something of the
user's now is kept and forgotten: a folder the memory tool wrote into, a
file written in place or replaced (another inode, change time or bytes).

A caller runs bwrap with `Held.policy` after `hold` and calls `release`
once bwrap has ended.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from zapcli.control import PRESENT
from zapcli.plain import field, plain, replace
from zapcli.sandbox import git_exclude
from zapcli.sandbox.book import Book, same, start, write
from zapcli.sandbox.neutral import content
from zapcli.sandbox.policy import Policy

TRIES = 5  # a placeholder removed under us between its open and its lock: made again
HOLD_TRIES = 60  # a whole hold started again: sandboxes ending in the same folder meanwhile
LOCK_WAIT_S = 5.0


@plain
class Held:
    """The policy as it can be mounted now (placeholders that could not be made
    left out: nothing else could make them either; git's exclude files
    covered), the locks that keep its control paths, and `notes` on what was
    left out."""

    policy: Policy
    records: str = ""
    record: str = ""  # this start's record (`zapcli.sandbox.book`), if it made any
    notes: list[str] = field(default_factory=list)
    _locks: list[tuple[str, int]] = field(default_factory=list)
    _covers: list[str] = field(default_factory=list)

    def release(self) -> None:
        """Let go of every control path; remove each placeholder no other
        sandbox still holds, and the exclude files made for git inside. Call
        once bwrap has ended; safe to call twice."""
        locks, self._locks = self._locks, []
        covers, self._covers = self._covers, []
        for cover in covers:
            try:
                os.unlink(cover)
            except OSError:
                pass
        book = Book(self.records, own=self.record) if locks and self.records else None
        for path, fd in reversed(locks):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)  # another sandbox still holds it: the last one removes it
                continue
            try:
                if book is not None:
                    book.settle(path, fd)
            finally:
                os.close(fd)
        if book is not None:
            book.save()


def _open(path: str) -> int | None:
    """A read-only descriptor of the folder or regular file at `path` (a
    link is never followed, a fifo never waited on); None for anything else."""
    if not _kept_kind(os.lstat(path)):
        return None  # a device is never opened: that alone may act
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            return None
        raise
    if not _kept_kind(os.fstat(fd)):  # swapped since the look
        os.close(fd)
        return None
    return fd


def _kept_kind(st: os.stat_result) -> bool:
    return stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)


def is_placeholder(path: str, records: str) -> bool:
    """Whether `path` is a placeholder zapcli made to hold a missing control
    file, as it was made (to say so to whoever wants to write a file there)."""
    try:
        fd = _open(path)
    except OSError:
        return False
    if fd is None:
        return False
    try:
        st = os.fstat(fd)
        want = content(path)
        if stat.S_ISREG(st.st_mode) and (want is None or st.st_size != len(want)):
            return False  # the common case, a file of the user's: no record read
        return Book(records).still_made(path, st, fd)
    except OSError:
        return False
    finally:
        os.close(fd)


def sweep(records: str) -> list[str]:
    """Remove the placeholders no sandbox holds any more (left by a runner
    that was killed); the paths removed."""
    book = Book(records)
    removed: list[str] = []
    for path in sorted({p for paths in book.files.values() for p in paths}, reverse=True):
        try:
            fd = _open(path)
        except OSError:
            fd = None
        if fd is None:
            book.settled.add(path)  # gone, or neither folder nor file: not ours to touch
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live sandbox holds it
        try:
            book.settle(path, fd)
            if not os.path.lexists(path):
                removed.append(path)
        finally:
            os.close(fd)
    book.save()
    return removed


def _make(path: str) -> bool:
    """Make the placeholder at `path`: an empty folder, or a file of the
    name's neutral content. False when something is there already."""
    text = content(path)
    try:
        if text is None:
            os.mkdir(path, 0o755)
            return True
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
    except FileExistsError:
        return False
    try:
        view = memoryview(text)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return True


def _lock(path: str, may_make: bool) -> tuple[int | None, bool]:
    """(a descriptor of the folder or file at `path` under a shared lock,
    whether it was made here); (None, False) when it is neither (a link is
    bound as its target is, and noted by the policy) or cannot be made.
    Raises OSError for a placeholder that cannot be made."""
    for _ in range(TRIES):
        made = False
        if may_make and not os.path.lexists(path):
            made = _make(path)
        try:
            fd = _open(path)
        except FileNotFoundError:
            if not may_make:
                raise  # not ours to make: the caller takes the policy as it is now
            continue  # removed by a sandbox that ended just now: make it again
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                return None, False
            raise
        if fd is None:
            return None, False
        try:
            _shared(fd)
        except OSError:
            os.close(fd)
            raise
        try:
            if same(os.fstat(fd), os.lstat(path)):
                return fd, made
        except OSError:
            pass
        os.close(fd)  # removed (or replaced) while we waited: again
    raise OSError(errno.EBUSY, "kept being removed while the sandbox started", path)


def _shared(fd: int, wait_s: float = LOCK_WAIT_S) -> None:
    """A shared lock on `fd`; an exclusive one is held only for a remover's
    look and removal, so waiting long means its holder is stopped: EBUSY."""
    import time

    end = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > end:
                raise OSError(errno.EBUSY, "another process holds it locked") from None
            time.sleep(0.01)


class _Moved(Exception):
    """A control path went while it was being held (another sandbox in the
    same folder ended and removed its placeholder): hold again."""


def hold(policy: Policy, records: str = "") -> Held:
    """Make the policy's placeholders and hold every control path it binds
    read-only inside a writable root (a shared lock each); cover git's
    exclude files so git inside ignores the held files. `records`: the
    folder in zapcli's state where placeholders are recorded (empty: none
    are, and none are removed).

    The policy was resolved a moment ago: a control path it found existing
    may have been another sandbox's placeholder, removed since as that one
    ended. Such a path is held as the placeholder it would have been had it
    been missing then (`_as_now`), and a hold that sees one go while it
    holds starts again: the name is never left unheld, and bwrap never
    meets a missing mount point."""
    import time

    for attempt in range(HOLD_TRIES):
        try:
            return _hold(_as_now(policy), records)
        except _Moved:  # out of step with the others a moment (1-10 ms, growing): their
            # ends come in bursts (16 sandboxes of one folder ending; five tries, no pause,
            # were all spent inside one burst under load)
            time.sleep((1 + os.urandom(1)[0] % 10) * min(attempt + 1, 8) / 1000)
    raise OSError(errno.EBUSY, "its control files kept being removed while the sandbox started "
                  "(other sandboxes in the same folder ending meanwhile)")


def _as_now(policy: Policy) -> Policy:
    """`policy` with each control path in a writable root that is gone now
    replaced by a placeholder at the first part of it that is missing (a
    missing `.vscode` holds `.vscode/tasks.json`; one held only where it
    exists, `zapcli.control.PRESENT`, is left out), and each placeholder
    whose folder went replaced by that folder's own."""
    readonly: list[str] = []
    missing: list[str] = []
    for path, own in [*((p, False) for p in policy.readonly), *((p, True) for p in policy.placeholders)]:
        root = _root_of(path, policy.writable)
        gone = _first_missing(os.path.dirname(path) if own else path, root) if root else None
        if gone is None and not own:
            readonly.append(path)
        elif not own and root and os.path.relpath(path, root).replace(os.sep, "/") in PRESENT:
            continue
        elif (gone or path) not in missing:
            missing.append(gone or path)
    missing = [p for p in missing if not any(p.startswith(q + "/") for q in missing)]
    if readonly == list(policy.readonly) and missing == list(policy.placeholders):
        return policy
    return replace(policy, readonly=tuple(readonly), placeholders=tuple(missing))


def _first_missing(path: str, root: str) -> str | None:
    """The first folder or file on the way from `root` down to `path` that
    does not exist; None when all do."""
    here = root
    for part in os.path.relpath(path, root).split(os.sep):
        if part in ("", "."):
            continue
        here = os.path.join(here, part)
        if not os.path.lexists(here):
            return here
    return None


def _hold(policy: Policy, records: str) -> Held:
    """One try of `hold`. Raises _Moved when a path went meanwhile."""
    if records:
        sweep(records)
    held = Held(policy, records)
    locked: set[str] = set()
    made: list[str] = []
    stamps: dict[str, list[int]] = {}
    intent = [p for p in policy.placeholders if not os.path.lexists(p)]
    record = held.record = start(records, intent)

    def lock(path: str, make: bool) -> None:
        for folder in _between(path, policy.writable):  # another's placeholder it lies in
            if folder not in locked:
                locked.add(folder)
                fd, _ = _lock(folder, may_make=False)
                if fd is not None:
                    held._locks.append((folder, fd))
        if path not in locked:
            locked.add(path)
            fd, fresh = _lock(path, may_make=make)
            if fresh:
                made.append(path)
            if fd is not None:
                held._locks.append((path, fd))
                st = os.fstat(fd)
                if fresh and stat.S_ISREG(st.st_mode):
                    stamps[path] = [st.st_ino, st.st_ctime_ns]

    kept: list[str] = []
    for path in policy.placeholders:
        try:
            lock(path, True)
        except OSError as exc:
            if exc.errno == errno.ENOENT:  # its folder went (another sandbox's placeholder)
                held.release()
                raise _Moved() from None
            if exc.errno == errno.EBUSY:
                held.release()
                raise
            held.notes.append(f"{path} could not be held read-only ({exc.strerror}): nothing "
                              "can create it there")
            continue
        kept.append(path)
    for path in policy.readonly:
        if _root_of(path, policy.writable) is None:
            continue  # only a writable root holds placeholders, another sandbox's too
        try:
            lock(path, False)
        except FileNotFoundError:  # gone since `_as_now` looked: bwrap would not start
            held.release()
            raise _Moved() from None
        except OSError:
            continue
    if record:  # only what was made here is this start's to remove; no longer `making`
        try:
            write(record, made, stamps) if made else os.unlink(record)
        except OSError:
            pass
    held.policy = replace(policy, placeholders=tuple(kept))
    files = _held_files(held, set(made))
    if files:  # git inside passes over them (`git_exclude`)
        pairs, notes = git_exclude.covers(held.policy, files)
        held._covers += [cover for cover, _ in pairs]
        held.notes += notes
        held.policy = replace(held.policy, covers=(*held.policy.covers, *pairs))
    return held


def _root_of(path: str, roots: tuple[str, ...]) -> str | None:
    """The innermost writable root `path` lies strictly inside."""
    return max((r for r in roots if path.startswith(r.rstrip("/") + "/")), key=len, default=None)


def _between(path: str, roots: tuple[str, ...]) -> list[str]:
    """The folders between the writable root `path` lies in and `path`,
    outermost first (`.vscode` for `.vscode/tasks.json`): a placeholder
    another sandbox made there must outlive this one's, so it is held too."""
    root = _root_of(path, roots)
    if root is None:
        return []
    folders = []
    folder = os.path.dirname(path)
    while folder != root and folder.startswith(root.rstrip("/") + "/"):
        folders.append(folder)
        folder = os.path.dirname(folder)
    return folders[::-1]


def _held_files(held: Held, made: set[str]) -> list[str]:
    """The placeholder files this hold mounts: made here, or made by another
    sandbox of this user (recorded) and unchanged since."""
    book: Book | None = None
    out = []
    for path, fd in held._locks:
        st = os.fstat(fd)
        if content(path) is None or not stat.S_ISREG(st.st_mode):
            continue
        if path not in made:
            book = book or Book(held.records)
            if not book.still_made(path, st, fd):
                continue
        out.append(path)
    return out
