"""Files of one subagent: paths from a validated id, safe opens, single appends.

Imports `zapcli.ids`, `zapcli.paths`, `zapcli.errors`, `zapcli.trail.records`, `zapcli.trail.jsonl`,
`zapcli.trail.lookup` (which id a short one names: `resolve`).
The trail's lock (`locked`) and the one append for everyone but the batched
writer (`append`, seq assigned inside; `append_records` for ready-made records,
e.g. a Ray node's brought home) live here. Every open refuses symlinks (O_NOFOLLOW) and new files are created with O_EXCL
and mode 0600, so a planted symlink or a guessed id can never redirect a write.
"""

from __future__ import annotations

import _thread  # threading's core (threading itself costs ~1 ms of start-up)
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zapcli import ids
from zapcli.errors import NotFound, StateError
from zapcli.paths import FILE_MODE, ensure_dir, subagents_dir
from zapcli.trail import records
from zapcli.trail.lookup import resolve, why_not
from zapcli.trail.seq import last_seq

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


ENV = ".env"  # its spawner's environment, kept until it starts (`lifecycle.queue.keep_env`)
SUFFIXES = (".jsonl", ".out", ".err", ".end", ENV)  # every file of one subagent
HOME = ".home"  # and the folder of one: an agent CLI's private config home (docs/explanation/rules.md#agent-clis)
TMP = ".tmp"  # and its private scratch folder, the TMPDIR of its work (C23)
FOLDERS = (HOME, TMP)  # the folders of one subagent, removed with it


def path_for(sid: str, suffix: str = ".jsonl") -> Path:
    """`<state>/subagents/<id><suffix>`; the 8-hex tail of exactly one id, or
    the start of one (`resolve`), stands for it. Raises NotFound for anything
    else, before any path is built."""
    if not ids.is_valid(sid):
        sid = resolve(sid)
    if not ids.is_valid(sid):
        from zapcli.trail import runs

        if runs.is_run_id(sid):  # a `zapcli run`'s: said as what it is, where it is
            raise NotFound(runs.not_a_subagent(sid))
        raise NotFound(f"{_show(sid)} does not exist ({why_not(sid)})")
    return subagents_dir() / f"{sid}{suffix}"


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
    return _regular(_open(path, os.O_RDWR | os.O_APPEND | _NOFOLLOW | _CLOEXEC | _NONBLOCK), path)


def _regular(fd: int, path: Path) -> int:
    """`fd` when it is a regular file; else close it and raise OSError: a FIFO,
    socket or device planted in the store is never read or written (opening
    with O_NONBLOCK means even a FIFO's open cannot hang)."""
    try:
        is_file = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not is_file:
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


class _Held:
    """One trail's lock in this process: a re-entrant thread lock around one
    `flock` on the trail (flock locks belong to an open file, so a second
    open of the same trail in this process would block on its own lock)."""

    def __init__(self) -> None:
        self.rlock = _thread.RLock()
        self.fd = -1
        self.depth = 0


_HELD: dict[str, _Held] = {}
_HELD_GUARD = _thread.allocate_lock()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the trail's lock: exclusive across processes (`flock` on the trail
    itself) and threads, re-entrant within one thread.

    Every append (`append`, `end`, the batched writer) and every decision
    (approve, deny, kill, the child's deadline) happens under it, so seqs are
    unique and in order, no two writers splice a record, and "still pending?"
    or "not ended yet?" checks hold until the append. Retention's rewrite
    takes it too. Raises FileNotFoundError / OSError(ELOOP).
    """
    key = str(path)
    with _HELD_GUARD:
        held = _HELD.setdefault(key, _Held())
    with held.rlock:
        if held.depth == 0:
            held.fd = _flock_current(path)
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0:
                os.close(held.fd)  # releases the flock
                held.fd = -1


def _flock_current(path: Path) -> int:
    """An fd of the trail at `path`, flocked. A trail trimmed while it runs is
    replaced by a new file (`zapcli.trail.trim`): a lock won on the file that
    was there before is a lock on nothing, so it is taken again on the new one."""
    while True:
        fd = open_read(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            mine = os.fstat(fd)
            now = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:  # removed meanwhile: hold this one; the caller finds it gone
            return fd
        except BaseException:
            os.close(fd)
            raise
        if (mine.st_ino, mine.st_dev) == (now.st_ino, now.st_dev):
            return fd
        os.close(fd)


def open_read(path: Path) -> int:
    """Open a store file for reading without following symlinks; only a
    regular file is opened (OSError otherwise)."""
    return _regular(_open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK), path)


def _open(path: Path, flags: int) -> int:
    """os.open, where a socket's ENXIO ("No such device or address") says what it is."""
    try:
        return os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.EINVAL, "not a regular file", str(path)) from None
        raise


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


READ_MAX_BYTES = 64 << 20  # a trail larger than this is read as its head and its tail
READ_HEAD_BYTES = 1 << 20  # the spawn and process records, and more


def read_bounded(path: Path, limit: int = READ_MAX_BYTES) -> tuple[bytes, int]:
    """(the bytes a reader uses, how many in the middle it left out). Up to
    `limit` the whole file; past it (retention trims a finished trail to 1 MB,
    so this is damage — a NUL-filled tail after a crash — or a runaway agent)
    the first READ_HEAD_BYTES and the last bytes up to `limit`, each cut at a
    line boundary: every command stays bounded in memory and time, and the
    damage affects only this trail's answer. Raises as `read_bytes`."""
    fd = open_read(path)
    try:
        size = os.fstat(fd).st_size
        if size <= limit:
            os.close(fd)
            fd = -1
            return read_bytes(path), 0
        head = os.pread(fd, READ_HEAD_BYTES, 0)
        head = head[:head.rfind(b"\n") + 1]
        tail_at = size - (limit - READ_HEAD_BYTES)
        tail = os.pread(fd, limit - READ_HEAD_BYTES, tail_at)
        tail = tail[tail.find(b"\n") + 1:]
        return head + tail, size - len(head) - len(tail)
    finally:
        if fd >= 0:
            os.close(fd)


def first_line(path: Path, limit: int = READ_MAX_BYTES) -> bytes:
    """The file's first line (without its newline), read until the newline
    or `limit` bytes: a trail's `spawn` record without reading the rest.
    Raises as `open_read`."""
    fd = open_read(path)
    try:
        head = b""
        while b"\n" not in head and len(head) < limit:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            head += chunk
    finally:
        os.close(fd)
    return head.partition(b"\n")[0]


def exists(sid: str) -> bool:
    """True when `sid` is a valid id with a trail on disk (a symlink is not a trail)."""
    try:
        return path_for(sid).is_file() and not path_for(sid).is_symlink()
    except NotFound:
        return False


def sync_file(path: Path) -> None:
    """fsync the trail at `path` (what was written without it is on disk now)."""
    fd = open_read(path)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


def write_whole(fd: int, data: bytes, *, sync: bool = False) -> None:
    """Append `data` (whole lines) to the trail open on `fd`, under its lock:
    all of it or none of it. A write that fails part-way (ENOSPC at a page
    boundary writes the first part, then refuses the rest) is cut back to the
    size before it, so the trail always ends on a whole record. Re-raises."""
    size = os.fstat(fd).st_size
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    except OSError:
        try:
            os.ftruncate(fd, size)
        except OSError:
            pass
        raise


def create_trail(sid: str, spawn_fields: dict[str, Any], secrets: list[bytes], *,
                 sync: bool = True) -> Path:
    """Create `<id>.jsonl` exclusively holding the `spawn` record, fsynced
    unless `sync` is False (`spawn` leaves that to the runner's `start`).

    Raises StateError when the directory or file cannot be created; on a
    failed write the half-made file is removed (never half-written state).
    """
    return create_trail_line(sid, records.encode(records.make("spawn", 0, spawn_fields), secrets),
                             sync=sync)


def create_trail_line(sid: str, line: bytes, *, sync: bool = True) -> Path:
    """`create_trail` with the `spawn` record's line ready-made (a Ray node
    keeps the caller's record byte for byte). Raises StateError, ValueError
    for anything but one whole line."""
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        raise ValueError("a spawn record is one line ending in a newline")
    ensure_dir(subagents_dir())
    path = path_for(sid)
    try:
        fd = create_exclusive(path)
    except OSError as exc:
        raise StateError(f"could not create subagent directory: {exc.strerror or exc} ({path})") from None
    try:
        write_all(fd, line)
        if sync:
            os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise StateError(f"could not write trail {path}: {exc.strerror or exc}") from None
    os.close(fd)
    return path


def append(path: Path, rtype: str, fields: dict[str, Any], *, secrets: list[bytes] = (),  # type: ignore[assignment]
           sync: bool = True, retries: float = 0.0) -> int | None:
    """Append one record (not through the batched writer), under the trail's
    lock: its `seq` is the trail's last one plus one. Ends a torn fragment
    first, so no record is glued onto half of another. With `retries`
    (seconds) a full disk is retried until that time has passed. Returns the
    seq written, or None when the record could not be written.
    """
    give_up = time.monotonic() + retries
    while True:
        try:
            with locked(path):
                fd = open_append(path)
                try:
                    seq = last_seq(fd) + 1
                    line = records.encode(records.make(rtype, seq, fields), list(secrets))
                    write_whole(fd, (b"\n" + line) if ends_torn(fd) else line, sync=sync)
                    return seq
                finally:
                    os.close(fd)
        except OSError as exc:
            if exc.errno != errno.ENOSPC or time.monotonic() >= give_up:
                return None
        time.sleep(0.2)


def append_records(path: Path, recs: Iterable[dict[str, Any]], *, secrets: Iterable[bytes] = (),
                   sync: bool = True) -> int:
    """Append ready-made records (each keeps its `type`, `ts` and other
    fields; `v` and `ts` are filled in when missing), under the trail's lock:
    their `seq`s are assigned here, following the trail's last one. Each is
    encoded as `append` does (masked, within the size cap); all of them are
    written or none (`write_whole`: a full disk leaves the trail ending on a
    whole record). Returns how many were written; raises OSError."""
    masks = list(secrets)
    with locked(path):
        fd = open_append(path)
        try:
            seq = last_seq(fd)
            lines = []
            for rec in recs:
                seq += 1
                env = records.make(str(rec.get("type")), seq, {})
                lines.append(records.encode({**env, **rec, "seq": seq}, masks))
            if lines:
                data = b"".join(lines)
                write_whole(fd, (b"\n" + data) if ends_torn(fd) else data, sync=sync)
            return len(lines)
        finally:
            os.close(fd)
