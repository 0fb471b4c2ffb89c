"""A command the runner starts and waits for, without `subprocess`.

Imports `zapcli.supervisor.launch` (which of our descriptors a child must not
keep). `start` is `os.posix_spawn` in the runner's own working directory
and process group, its stdin, stdout and stderr the pipes the caller gives,
none of our other descriptors kept (as Popen's close_fds) and SIGPIPE /
SIGXFSZ back to their defaults (as Popen's restore_signals). `Child.wait`
is Popen's `wait`: the exit code, or minus the signal that ended it; with a
timeout, None while it runs. It waits on a pidfd (`zapcli.pidwait`), so an
exit is seen the moment it happens; elsewhere it polls `waitpid`. `subprocess`
(with locale, selectors, math: ~1 MB and ~4 ms) was most of what a shell
runner imported beyond the trail.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence

from zapcli.pidwait import ended_within
from zapcli.supervisor.launch import inherited_fds


class Child:
    """A started child: its pid, and its exit code once waited for."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """Its exit code if it has ended (reaped now), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its code is lost (0, as Popen says)
                pid, status = self.pid, 0
            if pid == self.pid:
                self._ended(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Its exit code; with `timeout` (seconds), None if it still runs then."""
        if self.returncode is not None:
            return self.returncode
        if timeout is None:
            try:
                self._ended(os.waitpid(self.pid, 0)[1])
            except ChildProcessError:
                self._ended(0)
            return self.returncode
        if ended_within(self.pid, timeout) is not None:
            return self.poll()
        end = time.monotonic() + timeout
        delay = 0.0005  # as Popen.wait: from half a millisecond up to 50 ms
        while self.poll() is None:
            left = end - time.monotonic()
            if left <= 0:
                return None
            delay = min(delay * 2, left, 0.05)
            time.sleep(delay)
        return self.returncode

    def _ended(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)


def start(argv: Sequence[str], *, stdin: int, stdout: int, stderr: int,
          env: Mapping[str, str], fd3: int | None = None) -> Child:
    """Start `argv` (its program an absolute path) in our working directory
    with `stdin`, `stdout` and `stderr` as its descriptors 0, 1 and 2 (and
    `fd3`, if given, as its 3). The caller closes its copies of those ends.
    Raises OSError when it cannot."""
    import _signal  # signal's core: `signal` builds its enums at import (every runner)

    actions: list[tuple[int, ...]] = [(os.POSIX_SPAWN_DUP2, stdin, 0),
                                      (os.POSIX_SPAWN_DUP2, stdout, 1),
                                      (os.POSIX_SPAWN_DUP2, stderr, 2)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in inherited_fds(set())]
    if fd3 is not None:
        actions.append((os.POSIX_SPAWN_DUP2, fd3, 3))
    # a bare program name is looked up on PATH (the sandbox's `bwrap` is a full path)
    how = os.posix_spawn if "/" in argv[0] else os.posix_spawnp
    pid = how(argv[0], list(argv), dict(env), file_actions=actions,
              setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
    return Child(pid)
