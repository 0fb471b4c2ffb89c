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
placeholder made is recorded in a folder of zapcli's state (`records`), so
one left by a runner killed with SIGKILL is removed by the next sandbox that
starts or by `zapcli gc` (`sweep`). A placeholder that is not empty any more
(the memory tool wrote its folder, a person an approved file) is kept.

A caller runs bwrap with `Held.policy` after `hold` and calls `release`
once bwrap has ended.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
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
        for path, fd in reversed(locks):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)  # another sandbox still holds it: the last one removes it
                continue
            try:
                _remove_if_placeholder(path, fd, self.records)
            finally:
                os.close(fd)


def _record_file(records: str, path: str) -> str:
    return os.path.join(records, hashlib.sha256(os.fsencode(path)).hexdigest()[:32] + ".json")


def _read_record(records: str, path: str) -> dict | None:
    try:
        with open(_record_file(records, path), encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) and data.get("path") == path else None
    except (OSError, ValueError):
        return None


def _write_record(records: str, path: str) -> None:
    """Recorded before the folder is made, so a crash right after leaves it
    sweepable. Best effort: a placeholder that cannot be recorded is still
    made (the protection comes first); only a crash could then leave it."""
    try:
        os.makedirs(records, mode=0o700, exist_ok=True)
        target = _record_file(records, path)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"path": path}, fh)
        os.replace(tmp, target)
    except OSError:
        pass


def _drop_record(records: str, path: str) -> None:
    try:
        os.unlink(_record_file(records, path))
    except OSError:
        pass


def _remove_if_placeholder(path: str, fd: int, records: str) -> None:
    """With the folder's exclusive lock held: remove it when it is a recorded
    placeholder, empty, and still at `path`; forget its record when it holds
    something now (it is the user's) or is gone."""
    record = _read_record(records, path) if records else None
    if record is None:
        return
    try:
        here, held = os.lstat(path), os.fstat(fd)
    except OSError:
        _drop_record(records, path)
        return
    if (here.st_dev, here.st_ino) != (held.st_dev, held.st_ino):
        return  # another folder is there now: decide on that one when it is held
    if os.listdir(fd):
        _drop_record(records, path)  # it holds something now: it is the user's
        return
    try:
        os.rmdir(path)
    except OSError:
        return
    _drop_record(records, path)


def is_placeholder(path: str, records: str) -> bool:
    """Whether `path` is an empty folder zapcli made to hold a missing control
    file (to say so to whoever wants to write a file there)."""
    try:
        return _read_record(records, path) is not None and os.path.isdir(path) \
            and not os.path.islink(path) and not os.listdir(path)
    except OSError:
        return False


def sweep(records: str) -> list[str]:
    """Remove the placeholders no sandbox holds any more (left by a runner
    that was killed); the paths removed."""
    removed: list[str] = []
    try:
        names = os.listdir(records)
    except OSError:
        return removed
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(records, name), encoding="utf-8") as fh:
                path = json.load(fh).get("path")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(path, str):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            _drop_record(records, path)  # gone, or no folder: not ours to touch
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live sandbox holds it
        try:
            _remove_if_placeholder(path, fd, records)
            if not os.path.lexists(path):
                removed.append(path)
        finally:
            os.close(fd)
    return removed


def _lock_folder(path: str, records: str, may_make: bool) -> tuple[int | None, bool]:
    """(a descriptor of the folder at `path` under a shared lock, whether it
    was made here); (None, False) when it is no folder (a file is bound as it
    is) or cannot be made. Raises OSError for a placeholder that cannot be made."""
    for _ in range(TRIES):
        made = False
        if may_make and not os.path.lexists(path):
            if records:
                _write_record(records, path)  # first the intent: a crash leaves it sweepable
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

    def lock(path: str, make: bool) -> None:
        for folder in _between(path, policy.writable):  # another's placeholder it lies in
            if folder not in locked:
                locked.add(folder)
                fd, _ = _lock_folder(folder, records, may_make=False)
                if fd is not None:
                    held._locks.append((folder, fd))
        if path not in locked:
            locked.add(path)
            fd, _ = _lock_folder(path, records, may_make=make)
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
