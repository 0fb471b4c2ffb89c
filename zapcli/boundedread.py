"""Reading a file that a user or a repository supplies — a definition, a
SKILL.md, a memory file, a knowledge source, mcp.json, config.yaml, an
output schema, a file an agent's tool reads or writes — without trusting
its size or its kind. Imports only the
standard library.

`open_regular(path)` opens only a regular file, never blocking on a FIFO;
`read_at_most(path, limit)` returns at most `limit + 1` bytes, so a caller
tells "too large" from the length without ever holding more than that in
memory (a 500 MB definition or `/dev/zero` costs `limit + 1` bytes, not the
machine's memory). Only a regular file is read: the open is non-blocking (a
FIFO's open cannot hang) and a FIFO, socket, device or folder raises
OSError whose `strerror` says what it is. Symlinks are followed, as a
plain open would.
"""

from __future__ import annotations

import errno
import os
import stat

_CHUNK = 1 << 16


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(path: str | os.PathLike[str], *, write: bool = False) -> int:
    """A file descriptor of the regular file at `path`, opened without ever
    blocking (a FIFO's open waits for its other end), its kind checked on the
    open file itself (no window for a swap between a check and the open).
    `write`: opened for writing, created if missing (0666 less the umask),
    not truncated. Blocking mode is restored before it is returned. Raises
    OSError: FileNotFoundError, PermissionError, or EINVAL / EISDIR / ENXIO
    for what is not a regular file ("is a FIFO (named pipe), not a regular
    file")."""
    flags = (os.O_WRONLY | os.O_CREAT) if write else os.O_RDONLY
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:  # a FIFO without a reader refuses a non-blocking writer
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "is a FIFO (named pipe) or a socket, not a regular file",
                          os.fspath(path)) from None
        raise
    return regular(fd, path)


def regular(fd: int, path: str | os.PathLike[str]) -> int:
    """`fd` (opened non-blocking) when it is a regular file, in blocking mode
    again; closed and OSError (EISDIR, EINVAL) saying what it is otherwise."""
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _kind(mode)
            code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
            raise OSError(code, f"is {kind}, not a regular file" if kind.startswith("a ")
                          else kind, os.fspath(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at_most(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most `limit + 1` bytes of the regular file at `path` (more than
    `limit` means the file is larger than the limit). Raises OSError as
    `open_regular` does."""
    fd = open_regular(path)
    try:
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def larger_than(limit: int) -> str:
    """`limit` in words for a refusal: "32 KB", "256 KB", "1 MB"."""
    if limit >= 1 << 20 and limit % (1 << 20) == 0:
        return f"{limit >> 20} MB"
    if limit >= 1 << 10 and limit % (1 << 10) == 0:
        return f"{limit >> 10} KB"
    return f"{limit:,} bytes"
