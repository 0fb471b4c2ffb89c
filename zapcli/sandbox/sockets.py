"""Unix sockets out of reach when the network is off. Imports only the
standard library.

A new network namespace already cuts TCP, UDP and abstract unix sockets,
but a socket with a path is reached through the file system, and a
read-only mount does not stop `connect`: tmux's server (a shell as the
user), X11 (the user's keystrokes), D-Bus, an ssh-agent or an ssh
ControlMaster (logins elsewhere), docker.sock (root). So with the network
off, `plan` hides the folders sockets live in — `/tmp`, `/run/user` and
`$XDG_RUNTIME_DIR` — as empty read-only folders, now and for sockets made
later, and covers every other listening socket the kernel lists
(`/proc/net/unix`) with /dev/null. Sockets in the writable roots and the
scratch folder stay (the workspace is the agent's), and so do those the
definition declares (`sandbox.sockets`: a socket or a folder of them).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from zapcli.plain import frozen

FOLDERS = ("/tmp", "/run/user")  # and $XDG_RUNTIME_DIR
SKIP = ("/proc/", "/sys/", "/dev/")  # made anew by bwrap: nothing of the host's is there
UNIX_TABLE = "/proc/net/unix"


@frozen
class Plan:
    """`hide`: folders to mount an empty read-only tmpfs on; `mask`: socket
    files to cover with /dev/null; `show`: paths inside a hidden folder to
    bind back read-only (declared sockets, what the helper needs to start)."""

    hide: tuple[str, ...] = ()
    mask: tuple[str, ...] = ()
    show: tuple[str, ...] = ()


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def listening() -> list[str]:
    """The paths of the unix sockets bound on this host (its network
    namespace), as the kernel lists them; [] where it does not."""
    try:
        with open(UNIX_TABLE, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()[1:]
    except OSError:
        return []
    out = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            out.append(fields[7])
    return out


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def plan(*, network: bool, writable: Iterable[str], scratch: str, hidden: Iterable[str],
         declared: Iterable[str], keep: Iterable[str] = (),
         runtime: str | None = None) -> Plan:
    """What to hide for a sandbox (nothing with the network on). `hidden`:
    folders the policy hides already; `keep`: paths the sandbox needs to
    see wherever they are; `runtime`: $XDG_RUNTIME_DIR (read from the
    environment when None)."""
    if network:
        return Plan()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "") if runtime is None else runtime
    opened = [os.path.realpath(p) for p in (*writable, scratch) if p]
    shown = [os.path.realpath(p) for p in declared if p and os.path.lexists(p)]
    shut = [os.path.realpath(h) for h in hidden if h]
    folders: list[str] = []
    for raw in (*FOLDERS, runtime):
        if not raw or not os.path.isabs(raw) or not os.path.isdir(raw):
            continue
        real = os.path.realpath(raw)
        if real == "/" or _under(real, [*folders, *shut]) or _under(real, shown):
            continue  # already hidden, or declared whole
        if _under(real, opened):
            continue  # the workspace is this folder or holds it: it is the agent's
        folders = [f for f in folders if not _under(f, [real])] + [real]
    mask = []
    for raw in dict.fromkeys(listening()):
        real = os.path.realpath(raw)
        if (real.startswith(SKIP) or _under(real, [*folders, *shut, *opened, *shown])
                or not _is_socket(real)):
            continue
        mask.append(real)
    show = [p for p in dict.fromkeys([*shown, *(os.path.realpath(k) for k in keep if k)])
            if _under(p, folders) and os.path.lexists(p)]
    return Plan(tuple(folders), tuple(mask), tuple(show))
