"""Start a detached child: its own session, stdin /dev/null, no inherited fds.

Imports `zapcli.supervisor.procfs` (psutil as its fallback), `zapcli.redact`. The child's stdout goes nowhere and its stderr to a file the
caller names (so a crash before the child's own logging still leaves a
traceback behind); the caller's pipes are never inherited, which is what lets
`id=$(zapcli spawn …)` return at once. Secret-named variables are not in
the child's environment block: they reach it through an inherited memory
file (`zapcli.redact.restore_secrets` on the child's side).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from zapcli.paths import SUBAGENT_MARKER as MARKER  # a launch drops it: see paths


def launch_detached(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | Path,
                    stderr_path: Path) -> tuple[int, float]:
    """Start `argv` detached; return (pid, create_time in epoch seconds).

    Raises OSError when the program cannot be started.
    """
    import subprocess  # here: every command that derives its session imports this module

    public, pass_fds = secret_env(env)
    public.pop(MARKER, None)  # a parent subagent's, inherited: never this one's
    try:
        err_fd = os.open(stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err_fd,
                cwd=str(cwd), env=public, start_new_session=True, close_fds=True, pass_fds=pass_fds,
            )
        finally:
            os.close(err_fd)
    finally:
        close_fds(pass_fds)
    # Popen's finalizer would warn that the child still runs; it is meant to.
    proc.returncode = 0
    return proc.pid, process_create_time(proc.pid)


def secret_env(env: Mapping[str, str]) -> tuple[dict[str, str], tuple[int, ...]]:
    """`zapcli.redact.handoff`: secret-named variables through a memory file."""
    from zapcli.redact import handoff

    return handoff(env)


def close_fds(fds: Sequence[int]) -> None:
    """Close `secret_env`'s fds in the launcher once the child has them."""
    from zapcli.redact import close_handoff

    close_handoff(fds)


def process_create_time(pid: int) -> float:
    """psutil's create time (epoch seconds) for `pid`; 0.0 if it already vanished."""
    from zapcli.supervisor import procfs

    st = procfs.stat(pid)
    if st is not None:
        return st[1]
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return 0.0


def outermost_ancestor() -> int:
    """The oldest ancestor of this process visible in its PID namespace (the
    one whose parent is 0): the stand-in leader when `getsid` answers 0."""
    from zapcli.supervisor import procfs

    pid = os.getpid()
    for _ in range(4096):  # a parent chain is never longer; guards a /proc oddity
        ppid = procfs.parent(pid)
        if ppid is None:  # no /proc: ask psutil, which knows other platforms
            import psutil

            try:
                ppid = psutil.Process(pid).ppid()
            except psutil.Error:
                return pid
        if ppid <= 0:
            return pid
        pid = ppid
    return pid
