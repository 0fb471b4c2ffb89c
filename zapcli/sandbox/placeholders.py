"""Placeholders: the empty folders zapcli makes where a control file does not
exist yet (a folder's `.zapcli/`, `.envrc`, `.git` of a folder that is no
repository), so the sandbox can hold that name read-only — a mount needs
something to mount on — and removes again once no sandbox uses them. Imports
only the standard library.

A placeholder is always an empty folder, never a file: git takes an empty
`.git` folder for no repository (an empty `.git` file breaks it), and `git
status` lists no empty folder. Every sandbox that binds a control folder
read-only holds a shared `flock` on it for its whole life; whoever ends last
(its exclusive lock granted at once) removes a placeholder that is still
empty and still the folder that was made — a placeholder that another
sandbox, of this user or another, still mounts is never removed under it
(removing a mount point in another namespace would unmount it there). Each
placeholder made is recorded in a folder of zapcli's state (`records`, one
small file per sandbox start), so one left by a runner killed with SIGKILL is removed by the next sandbox that
starts or by `zapcli gc` (`sweep`). A placeholder that is not empty any more
(the memory tool wrote its folder, a person an approved file) is kept.

A caller runs bwrap with `Held.policy` after `hold` and calls `release`
once bwrap has ended.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from dataclasses import dataclass, field, replace

from zapcli.sandbox.policy import Policy

TRIES = 5  # a placeholder removed under us between its open and its lock: made again
LOCK_WAIT_S = 5.0


@dataclass
class Held:
    """The policy as it can be mounted now (placeholders that could not be made
    left out: nothing else could make them either), the locks that keep its
    folders, and `notes` on what was left out."""

    policy: Policy
    records: str = ""
    notes: list[str] = field(default_factory=list)
    _locks: list[tuple[str, int]] = field(default_factory=list)

    def release(self) -> None:
        """Let go of every folder; remove each placeholder no other sandbox
        still holds. Call once bwrap has ended; safe to call twice."""
        locks, self._locks = self._locks, []
        book = _Book(self.records) if locks and self.records else None
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


class _Book:
    """The records: one JSON file per sandbox start that made placeholders,
    `{"paths": [...]}`. Read whole (a few small files), settled path by path
    under each folder's exclusive lock, and written back once."""

    def __init__(self, records: str):
        self.records = records
        self.files: dict[str, list[str]] = {}
        try:
            names = os.listdir(records)
        except OSError:
            names = []
        for name in names:
            if name.endswith(".json"):
                try:
                    with open(os.path.join(records, name), encoding="utf-8") as fh:
                        paths = json.load(fh).get("paths")
                except (OSError, ValueError, AttributeError):
                    continue
                if isinstance(paths, list):
                    self.files[name] = [p for p in paths if isinstance(p, str)]
        self.settled: set[str] = set()

    def recorded(self, path: str) -> bool:
        return any(path in paths for paths in self.files.values())

    def settle(self, path: str, fd: int) -> None:
        """With the folder's exclusive lock held: remove it when it is a
        recorded placeholder, empty, and still at `path`; forget it when it
        holds something now (it is the user's) or is gone."""
        if not self.recorded(path):
            return
        try:
            here, held = os.lstat(path), os.fstat(fd)
        except OSError:
            self.settled.add(path)
            return
        if (here.st_dev, here.st_ino) != (held.st_dev, held.st_ino):
            return  # another folder is there now: decided on when that one is held
        if os.listdir(fd):
            self.settled.add(path)  # it holds something now: it is the user's
            return
        try:
            os.rmdir(path)
        except OSError:
            return
        self.settled.add(path)

    def save(self) -> None:
        for name, paths in self.files.items():
            left = [p for p in paths if p not in self.settled]
            if left == paths:
                continue
            target = os.path.join(self.records, name)
            try:
                if left:
                    _write(target, left)
                else:
                    os.unlink(target)
            except OSError:
                continue


def _write(target: str, paths: list[str]) -> None:
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"paths": paths}, fh)
    os.replace(tmp, target)


def _record(records: str, paths: list[str]) -> str:
    """Record the placeholders about to be made, before they are (a crash
    right after leaves them sweepable); the record's file. Best effort: one
    that cannot be recorded is still made (the protection comes first)."""
    if not records or not paths:
        return ""
    target = os.path.join(records, f"{os.getpid()}.{os.urandom(6).hex()}.json")
    try:
        os.makedirs(records, mode=0o700, exist_ok=True)
        _write(target, paths)
    except OSError:
        return ""
    return target


def is_placeholder(path: str, records: str) -> bool:
    """Whether `path` is an empty folder zapcli made to hold a missing control
    file (to say so to whoever wants to write a file there)."""
    try:
        return os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path) \
            and _Book(records).recorded(path)
    except OSError:
        return False


def sweep(records: str) -> list[str]:
    """Remove the placeholders no sandbox holds any more (left by a runner
    that was killed); the paths removed."""
    book = _Book(records)
    removed: list[str] = []
    for path in sorted({p for paths in book.files.values() for p in paths}, reverse=True):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            book.settled.add(path)  # gone, or no folder: not ours to touch
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


def _lock_folder(path: str, may_make: bool) -> tuple[int | None, bool]:
    """(a descriptor of the folder at `path` under a shared lock, whether it
    was made here); (None, False) when it is no folder (a file is bound as it
    is) or cannot be made. Raises OSError for a placeholder that cannot be made."""
    for _ in range(TRIES):
        made = False
        if may_make and not os.path.lexists(path):
            try:
                os.mkdir(path, 0o755)
                made = True
            except FileExistsError:
                pass
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # removed by a sandbox that ended just now: make it again
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                return None, False
            raise
        try:
            _shared(fd)
        except OSError:
            os.close(fd)
            raise
        try:
            if os.path.samestat(os.fstat(fd), os.lstat(path)):
                return fd, made
        except OSError:
            pass
        os.close(fd)  # removed (or replaced) while we waited: again
    raise OSError(errno.EBUSY, "kept being removed while the sandbox started", path)


def _shared(fd: int, wait_s: float = LOCK_WAIT_S) -> None:
    """A shared lock on `fd`; an exclusive one is held only for a remover's
    look and rmdir, so waiting long means its holder is stopped: EBUSY."""
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


def hold(policy: Policy, records: str = "") -> Held:
    """Make the policy's placeholders and hold every control folder it binds
    read-only (a shared lock each). `records`: the folder in zapcli's state
    where placeholders are recorded (empty: none are, and none are removed)."""
    if records:
        sweep(records)
    held = Held(policy, records)
    locked: set[str] = set()
    made: list[str] = []
    intent = [p for p in policy.placeholders if not os.path.lexists(p)]
    record = _record(records, intent)

    def lock(path: str, make: bool) -> None:
        for folder in _between(path, policy.writable):  # another's placeholder it lies in
            if folder not in locked:
                locked.add(folder)
                fd, _ = _lock_folder(folder, may_make=False)
                if fd is not None:
                    held._locks.append((folder, fd))
        if path not in locked:
            locked.add(path)
            fd, fresh = _lock_folder(path, may_make=make)
            if fresh:
                made.append(path)
            if fd is not None:
                held._locks.append((path, fd))

    kept: list[str] = []
    for path in policy.placeholders:
        try:
            lock(path, True)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                held.release()
                raise
            held.notes.append(f"{path} could not be held read-only ({exc.strerror}): nothing "
                              "can create it there")
            continue
        kept.append(path)
    for path in policy.readonly:
        try:
            lock(path, False)
        except OSError:
            continue
    if record and made != intent:  # only what was made here is this start's to remove
        try:
            _write(record, made) if made else os.unlink(record)
        except OSError:
            pass
    held.policy = replace(policy, placeholders=tuple(kept))
    return held


def _between(path: str, roots: tuple[str, ...]) -> list[str]:
    """The folders between the writable root `path` lies in and `path`,
    outermost first (`.vscode` for `.vscode/tasks.json`): a placeholder
    another sandbox made there must outlive this one's, so it is held too."""
    root = max((r for r in roots if path.startswith(r.rstrip("/") + "/")), key=len, default=None)
    if root is None:
        return []
    folders = []
    folder = os.path.dirname(path)
    while folder != root and folder.startswith(root.rstrip("/") + "/"):
        folders.append(folder)
        folder = os.path.dirname(folder)
    return folders[::-1]
