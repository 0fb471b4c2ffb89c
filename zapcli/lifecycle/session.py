"""The current session (docs/explanation/rules.md#ids-and-sessions) and its on-disk membership index.

Imports `zapcli.paths`, `zapcli.supervisor.launch` (the session leader's start time). A session is `ZAPCLI_SESSION`, else the caller's
terminal session: `os.getsid(0)` plus that leader's start time, so a reused
sid is a new session. When the leader lies outside this PID namespace
(`getsid` answers 0, as in containers and CI sandboxes) the outermost
visible ancestor stands in for it: `tty-0-<its start time>`. Membership markers under `<state>/sessions/<key>/`
(`all/` and `active/`) let `list` and the queue read only this session's
trails; they are hints, always checked against the trail, never status.
`unreported/` holds what a tool caller of one process a call (`zapcli call`)
started and no tool result has yet shown ended: what its `wait` without ids
still owes it, across its processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from zapcli.paths import ensure_dir, state_dir

KINDS = ("all", "active", "unreported")  # the marker folders of a session
_OVERRIDE: ContextVar[str | None] = ContextVar("zapcli_session", default=None)


@contextmanager
def using(session: str) -> Iterator[None]:
    """Within this block (this thread or task), `current()` is `session`: a
    server with several connections gives each its own (`zapcli mcp serve`)."""
    token = _OVERRIDE.set(session)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


def current() -> str:
    """The session name for this process (or the block of `using`)."""
    override = _OVERRIDE.get()
    if override:
        return override
    env = os.environ.get("ZAPCLI_SESSION")
    if env:
        try:
            env.encode("utf-8")
        except UnicodeEncodeError:
            from zapcli.errors import UsageError

            raise UsageError("ZAPCLI_SESSION is not valid UTF-8; set it to a UTF-8 name, "
                             "e.g. export ZAPCLI_SESSION=build-42") from None
        return env
    sid = os.getsid(0)
    from zapcli.supervisor.launch import outermost_ancestor, process_create_time

    leader = sid if sid > 0 else outermost_ancestor()
    started = int(process_create_time(leader))  # 0 when the leader is gone or unreadable
    return f"tty-{sid}-{started}"


def has_terminal() -> bool:
    """True when this process has a controlling terminal (opening /dev/tty works)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def named() -> bool:
    """True when the current session is one a person named (ZAPCLI_SESSION,
    also as an MCP server's every connection's), not one derived from the
    terminal or a connection."""
    env = os.environ.get("ZAPCLI_SESSION")
    return bool(env) and _OVERRIDE.get() in (None, env)


def describe() -> tuple[str, str]:
    """(source, what the current session is derived from, in words) for `zapcli
    session`: "ZAPCLI_SESSION", "terminal", or "process session" when there is
    no terminal — the `tty-` name is the POSIX session's either way (its id
    and its leader's start time), so it stays the same if the terminal goes."""
    if _OVERRIDE.get():
        return "connection", "the MCP connection's own session"
    if os.environ.get("ZAPCLI_SESSION"):
        return "ZAPCLI_SESSION", "the ZAPCLI_SESSION environment variable"
    sid = os.getsid(0)
    if sid > 0:
        leader = f"process session {sid} and its leader's start time"
    else:
        leader = ("the outermost visible process and its start time (getsid answered 0: "
                  "the session's leader is outside this process namespace)")
    if has_terminal():
        return "terminal", f"this terminal's {leader}" if sid > 0 else leader
    return "process session", (f"{leader}; there is no "
                               "terminal (a harness that starts each command in a session of "
                               "its own splits them: set ZAPCLI_SESSION to share one)")


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def key(session: str) -> str:
    """A filesystem-safe key for any session string: the name itself when it is
    short and plain (no hashlib import on the hot path, no `re` either), else a sha256 prefix."""
    if 0 < len(session) <= 64 and _SAFE.issuperset(session) and session not in (".", ".."):
        return "s-" + session
    import hashlib

    return "h-" + hashlib.sha256(session.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def _dir(session: str, kind: str) -> Path:
    return state_dir() / "sessions" / key(session) / kind


def add(session: str, sid: str) -> None:
    """Record `sid` as a member (and active) of `session`, in creation order."""
    name = f"{time.time_ns():020d}_{sid}"
    for kind in ("all", "active"):
        folder = ensure_dir(_dir(session, kind))
        (folder / name).touch(mode=0o600)


def _names(session: str, kind: str) -> tuple[Path, list[tuple[str, str]]]:
    """The marker folder and its (id, marker name) pairs, oldest first. No
    Path per marker: `list` reads a thousand of them to show twenty."""
    folder = _dir(session, kind)
    try:
        names = sorted(os.listdir(folder))
    except OSError:  # missing, or something that is not a folder in the way
        return folder, []
    return folder, [(n.partition("_")[2], n) for n in names if "_" in n]


def _members(session: str, kind: str, sid: str) -> list[Path]:
    """The marker files of `sid` in `session`'s `kind` folder."""
    folder, named = _names(session, kind)
    return [folder / n for member, n in named if member == sid]


def members(session: str) -> list[str]:
    """All ids of `session`, oldest first."""
    return [sid for sid, _ in _names(session, "all")[1]]


def members_since(session: str, ns: int) -> list[str]:
    """Ids of `session` whose marker was made at `ns` (time.time_ns()) or later, oldest first."""
    return [sid for sid, name in _names(session, "all")[1]
            if (stamp := name.partition("_")[0]).isdigit() and int(stamp) >= ns]


def active(session: str) -> list[str]:
    """Ids of `session` not yet seen terminal, oldest first."""
    return [sid for sid, _ in _names(session, "active")[1]]


def drop_if_abandoned(session: str, sid: str, older_than_s: float = 60.0) -> None:
    """Forget a member whose trail does not exist: only once its marker is old,
    since `spawn` writes the marker just before the trail (a fresh marker
    without a trail is a spawn in progress, not an abandoned one)."""
    cutoff = time.time_ns() - int(older_than_s * 1e9)
    for kind in ("all", "active"):
        for path in _members(session, kind, sid):
            stamp = path.name.partition("_")[0]
            if stamp.isdigit() and int(stamp) < cutoff:
                path.unlink(missing_ok=True)


def deactivate(session: str, sid: str) -> None:
    """Drop `sid` from the active markers (it was seen terminal)."""
    for path in _members(session, "active", sid):
        path.unlink(missing_ok=True)


def add_unreported(session: str, sid: str) -> None:
    """`sid` was started by a tool call of `session`: its end is owed to it."""
    folder = ensure_dir(_dir(session, "unreported"))
    (folder / f"{time.time_ns():020d}_{sid}").touch(mode=0o600)


def unreported(session: str) -> list[str]:
    """Ids started by `session`'s tool calls whose end no result showed yet, oldest first."""
    return [sid for sid, _ in _names(session, "unreported")[1]]


def reported(session: str, sids: Iterable[str]) -> None:
    """A tool result showed these ended: nothing more is owed."""
    done = set(sids)
    if not done:
        return
    folder, named = _names(session, "unreported")
    for member, name in named:
        if member in done:
            (folder / name).unlink(missing_ok=True)


def forget(session: str, sid: str) -> None:
    """Drop every marker of `sid` (retention deleted it)."""
    for kind in KINDS:
        for path in _members(session, kind, sid):
            path.unlink(missing_ok=True)


def forget_everywhere(sid: str, kinds: tuple[str, ...] = KINDS) -> None:
    """Drop the markers of `sid` (of `kinds`) in every session: for a trail
    that lost its spawn record, which named its session."""
    root = state_dir() / "sessions"
    try:
        keys = os.listdir(root)
    except (FileNotFoundError, NotADirectoryError):
        return
    for k in keys:
        for kind in kinds:
            try:
                names = os.listdir(root / k / kind)
            except OSError:
                continue
            for n in names:
                if n.partition("_")[2] == sid:
                    (root / k / kind / n).unlink(missing_ok=True)


def all_active() -> list[tuple[str, str]]:
    """(session key, id) for every active marker of every session."""
    root = state_dir() / "sessions"
    out: list[tuple[str, str]] = []
    try:
        keys = os.listdir(root)
    except FileNotFoundError:
        return []
    for k in keys:
        try:
            names = os.listdir(root / k / "active")
        except (FileNotFoundError, NotADirectoryError):
            continue
        out.extend((k, n.partition("_")[2]) for n in names if "_" in n)
    return out


def all_members() -> list[tuple[str, str]]:
    """(creation stamp, id) for every member marker of every session."""
    root = state_dir() / "sessions"
    out: list[tuple[str, str]] = []
    try:
        keys = os.listdir(root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    for k in keys:
        try:
            names = os.listdir(root / k / "all")
        except (FileNotFoundError, NotADirectoryError):
            continue
        for n in names:
            stamp, sep, sid = n.partition("_")
            if sep:
                out.append((stamp, sid))
    return out
