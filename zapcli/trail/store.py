"""Files of one subagent: paths from a validated id, safe opens, single appends.

Imports `zapcli.ids`, `zapcli.paths`, `zapcli.errors`, `zapcli.trail.records`.
Every open refuses symlinks (O_NOFOLLOW) and new files are created with O_EXCL
and mode 0600, so a planted symlink or a guessed id can never redirect a write.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zapcli import ids
from zapcli.errors import NotFound, StateError
from zapcli.paths import FILE_MODE, ensure_dir, subagents_dir
from zapcli.trail import records

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def path_for(sid: str, suffix: str = ".jsonl") -> Path:
    """`<state>/subagents/<id><suffix>`. Raises NotFound for anything that is
    not a valid id, before any path is built."""
    if not ids.is_valid(sid):
        raise NotFound(f"{_show(sid)} does not exist (not a subagent id{_full_id_of(sid)})")
    return subagents_dir() / f"{sid}{suffix}"


def _full_id_of(part: object) -> str:
    """"; did you mean sa_…?" when `part` is the 8-hex tail of exactly one id."""
    if not (isinstance(part, str) and len(part) == 8 and all(c in "0123456789abcdef" for c in part)):
        return ""
    try:
        found = [n[:-6] for n in os.listdir(subagents_dir()) if n.endswith(f"_{part}.jsonl")]
    except OSError:
        return ""
    return f"; did you mean {found[0]}?" if len(found) == 1 and ids.is_valid(found[0]) else ""


def _show(value: object) -> str:
    odd = (not isinstance(value, str) or not value.isprintable() or not value
           or value != value.strip())  # a space around an id would be invisible
    text = repr(value) if odd else str(value)
    if isinstance(value, str) and value and value != value.strip() and ids.is_valid(value.strip()):
        text += " (spaces around the id)"
    return text[:120]


def create_exclusive(path: Path) -> int:
    """Create `path` (must not exist) 0600 for appending; return the fd."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | _NOFOLLOW | _CLOEXEC, FILE_MODE)


def open_append(path: Path) -> int:
    """Open an existing store file for appending without following symlinks."""
    return os.open(path, os.O_RDWR | os.O_APPEND | _NOFOLLOW | _CLOEXEC)


@contextmanager
def decisions_locked(path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on the trail itself while deciding an approval.

    Everyone who settles a pending request — `approve`, `deny`, `kill` and the
    child's own deadline — checks "still pending?" and appends the decision
    under this lock, so exactly one decision is recorded per request. The
    batched writer never takes it. Raises FileNotFoundError / OSError(ELOOP).
    """
    fd = open_read(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def open_read(path: Path) -> int:
    """Open a store file for reading without following symlinks."""
    return os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)


def read_bytes(path: Path) -> bytes:
    """The whole file. Raises FileNotFoundError; a symlink raises OSError(ELOOP)."""
    fd = open_read(path)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def exists(sid: str) -> bool:
    """True when `sid` is a valid id with a trail on disk (a symlink is not a trail)."""
    try:
        return path_for(sid).is_file() and not path_for(sid).is_symlink()
    except NotFound:
        return False


def ends_torn(fd: int) -> bool:
    """True when the file behind `fd` is non-empty and does not end in a newline."""
    size = os.fstat(fd).st_size
    if size == 0:
        return False
    return os.pread(fd, 1, size - 1) != b"\n"


def write_all(fd: int, data: bytes) -> None:
    """os.write until everything is written (regular files rarely write short)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def create_trail(sid: str, spawn_fields: dict[str, Any], secrets: list[bytes]) -> Path:
    """Create `<id>.jsonl` exclusively holding the fsynced `spawn` record.

    Raises StateError when the directory or file cannot be created; on a
    failed write the half-made file is removed (never half-written state).
    """
    ensure_dir(subagents_dir())
    path = path_for(sid)
    line = records.encode(records.make("spawn", 0, spawn_fields), secrets)
    try:
        fd = create_exclusive(path)
    except OSError as exc:
        raise StateError(f"could not create subagent directory: {exc.strerror or exc} ({path})") from None
    try:
        write_all(fd, line)
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise StateError(f"could not write trail {path}: {exc.strerror or exc}") from None
    os.close(fd)
    return path


def append_record(path: Path, rtype: str, fields: dict[str, Any], *, seq: int,
                  secrets: list[bytes] = (), sync: bool = True, retries: float = 0.0) -> bool:  # type: ignore[assignment]
    """Append one record from an observer or the spawner (not the batched writer).

    Ends a torn fragment first, so no record is glued onto half of another.
    With `retries` (seconds) a full disk is retried until that time has passed.
    Returns False when the record could not be written.
    """
    line = records.encode(records.make(rtype, seq, fields), list(secrets))
    give_up = time.monotonic() + retries
    while True:
        try:
            fd = open_append(path)
        except OSError:
            return False
        try:
            data = (b"\n" + line) if ends_torn(fd) else line
            write_all(fd, data)
            if sync:
                os.fsync(fd)
            return True
        except OSError as exc:
            if exc.errno != errno.ENOSPC or time.monotonic() >= give_up:
                return False
        finally:
            os.close(fd)
        time.sleep(0.2)
