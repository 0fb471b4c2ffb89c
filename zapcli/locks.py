"""Cross-process exclusive locks on a lock file (POSIX `flock`).

Imports nothing of zapcli. Every lock zapcli takes is taken here: the
queue, retention, worktree creation, the Ray pool and node agent, and the
memory tool's writes. Why not the `filelock` package (no longer a
dependency): on Linux it takes this same primitive (`flock` on a lock file),
while importing it costs about 50 ms (measured: `python -S -c 'import
filelock'` with filelock 4.3, against under 10 ms for a bare interpreter) on
`spawn`, whose whole budget is about 50 ms (tests/bench/bench_cli.py); one
primitive also means one behaviour (0600, links not followed, released when
the holder dies) wherever a lock is taken. The lock is released when the
file is closed, so a crashed holder never leaves it stuck.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockTimeout(Exception):
    """The lock stayed busy for the whole timeout."""


@contextmanager
def exclusive(path: Path, timeout_s: float) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created 0600). `timeout_s` 0 = try once.

    Raises LockTimeout when it cannot be had in time.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o600)
    try:
        give_up = time.monotonic() + timeout_s
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    raise LockTimeout(str(path)) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)
