"""Start a detached child: its own session, stdin /dev/null, no inherited fds;
its exit is collected once it ends (`reap_when_done`: no zombie runners).

Imports `zapcli.supervisor.procfs` (psutil as its fallback), `zapcli.redact`. The child's stdout goes nowhere and its stderr to a file the
caller names (so a crash before the child's own logging still leaves a
traceback behind); the caller's pipes are never inherited, which is what lets
`id=$(zapcli spawn …)` return at once. Secret-named variables are not in
the child's environment block: they reach it through an inherited memory
file (`zapcli.redact.restore_secrets` on the child's side).
"""

from __future__ import annotations

import _thread  # threading's core (threading itself costs ~1 ms of start-up)
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from zapcli.paths import SUBAGENT_MARKER as MARKER  # a launch drops it: see paths

# `posix_spawn` has no working-directory action before Python 3.13's: a shell
# that changes into it and execs the runner (same pid, same create time), when
# the runner is to start elsewhere than where we are (a queue drained from
# another folder); a spawn in its own folder starts it directly (~1 ms less).
_IN_CWD = 'cd -- "$0" && exec "$@"'


def launch_detached(argv: Sequence[str], *, env: Mapping[str, str], cwd: str | Path,
                    stderr_path: Path) -> tuple[int, float]:
    """Start `argv` detached; return (pid, create_time in epoch seconds).

    `os.posix_spawn`, not `subprocess` (its import, with threading,
    selectors and locale, was a tenth of `spawn`'s time): a new session,
    stdin and stdout /dev/null, stderr to `stderr_path`, none of our
    inheritable descriptors but the secrets' (as Popen's close_fds), and
    SIGPIPE / SIGXFSZ back to their defaults (as Popen's restore_signals).
    Raises OSError when the program cannot be started.
    """
    import _signal  # signal's core: `signal` builds its enums at import (~0.5 ms)

    if not os.path.isdir(cwd):
        raise FileNotFoundError(2, "No such file or directory", str(cwd))
    if not os.access(argv[0], os.X_OK):
        raise PermissionError(13, "Permission denied", str(argv[0]))
    public, pass_fds = secret_env(env)
    public.pop(MARKER, None)  # a parent subagent's, inherited: never this one's
    try:
        err_fd = os.open(stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            for fd in pass_fds:
                os.set_inheritable(fd, True)
            actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                       (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                       (os.POSIX_SPAWN_DUP2, err_fd, 2)]
            actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in inherited_fds(set(pass_fds))]
            if _here(cwd):  # where we are already (a spawn in its own folder): no shell
                public.update(_moved_env(str(cwd)))
                program, args = argv[0], list(argv)
            else:
                program, args = "/bin/sh", ["/bin/sh", "-c", _IN_CWD, str(cwd), *argv]
            how = os.posix_spawn if "/" in program else os.posix_spawnp
            pid = how(program, args, public, file_actions=actions, setsid=True,
                      setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
        finally:
            os.close(err_fd)
    finally:
        close_fds(pass_fds)
    created = process_create_time(pid)
    reap_when_done(pid)
    return pid, created


def _here(cwd: str | Path) -> bool:
    """Whether `cwd` (an absolute path) is the directory we are in."""
    try:
        return os.path.isabs(cwd) and os.path.samestat(os.stat(cwd), os.stat("."))
    except OSError:
        return False


def _moved_env(cwd: str) -> dict[str, str]:
    """PWD and OLDPWD as the `_IN_CWD` shell's `cd` leaves them (its child
    gets the same environment whether or not that shell runs): OLDPWD the
    directory it started in (our PWD when that names it, else its real
    path), PWD the one it changed into, as given."""
    old = os.environ.get("PWD", "")
    if not (os.path.isabs(old) and _here(old)):
        old = os.getcwd()
    return {"OLDPWD": old, "PWD": os.path.normpath(cwd)}


REAP_TICK_S = 0.5
_UNREAPED: set[int] = set()
_REAPER = {"running": False}
_REAP_LOCK = _thread.allocate_lock()


def reap_when_done(pid: int) -> None:
    """Collect `pid`'s exit once it ends, so a long-lived launcher (`mcp
    serve`, `zapcli run`) keeps no `<defunct>` runner (C39). One thread does
    it while any launched child has not ended, checking each with a
    non-blocking `waitpid` of that pid only (never another child's, e.g. a
    subprocess someone else waits for). A launcher that exits first leaves
    its runners to init, as before."""
    with _REAP_LOCK:
        _UNREAPED.add(pid)
        if _REAPER["running"]:
            return
        _REAPER["running"] = True
    _thread.start_new_thread(_reap, ())


def _reap() -> None:
    import time

    while True:
        time.sleep(REAP_TICK_S)
        with _REAP_LOCK:
            for pid in list(_UNREAPED):
                try:
                    ended = os.waitpid(pid, os.WNOHANG)[0] == pid
                except ChildProcessError:  # reaped elsewhere, or not ours after all
                    ended = True
                if ended:
                    _UNREAPED.discard(pid)
            if not _UNREAPED:
                _REAPER["running"] = False
                return


def inherited_fds(keep: set[int]) -> list[int]:
    """Our inheritable descriptors above stderr (a caller's, passed down to
    us), except `keep`: the runner must hold none of them."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    out = []
    for fd in fds:
        if fd < 3 or fd in keep:
            continue
        try:
            if os.get_inheritable(fd):
                out.append(fd)
        except OSError:  # closed (the listing's own), or never open
            continue
    return out


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
