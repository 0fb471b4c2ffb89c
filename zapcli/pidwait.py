"""Waiting for a child process to end the moment it ends: a pidfd (Linux
5.3+) polled with a timeout, where Python's own `wait(timeout)` sleeps
between looks — 0.5 ms, then twice as long each time, up to 50 ms. Imports
only the standard library. Used by the shell runner's command
(`supervisor.child`) and every git zapcli runs (`worktrees.git`).
"""

from __future__ import annotations

import os


def ended_within(pid: int, timeout: float) -> bool | None:
    """Whether child `pid` (not yet reaped) ends within `timeout` seconds:
    True once it has (reap it then), False if it still runs; None where
    there is no pidfd (the caller waits its own way)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux, a kernel before 5.3, or reaped already
        return None
    try:
        import select

        poller = select.poll()
        poller.register(fd, select.POLLIN)  # readable when it has ended
        return bool(poller.poll(max(timeout, 0.0) * 1000))
    finally:
        os.close(fd)
