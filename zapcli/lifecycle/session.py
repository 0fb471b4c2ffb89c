"""The current session (docs/explanation/rules.md#ids-and-sessions) and its on-disk membership index.

Imports `zapcli.paths`, `zapcli.supervisor.launch` (the session leader's start time). A session is `ZAPCLI_SESSION`, else the caller's
terminal session: `os.getsid(0)` plus that leader's start time, so a reused
sid is a new session. When the leader lies outside this PID namespace
(`getsid` answers 0, as in containers and CI sandboxes) the outermost
visible ancestor stands in for it: `tty-0-<its start time>`. Membership markers under `<state>/sessions/<key>/`
(`all/` and `active/`) let `list` and the queue read only this session's
trails; they are hints, always checked against the trail, never status.
`queued/` marks one never started (taken away, under the queue's lock, just
before its runner starts, and by the runner itself) with what the queue
needs to pass it over unread while its pool is full
(`zapcli.lifecycle.queue.marker`); `parents/<id>` says a subagent was ever
named as `parent` (`parents/@since`: since when the session's spawns say
so): one never named has no subagent of its own to wait for, and no trail
is read to learn so.
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

KINDS = ("all", "active", "unreported", "queued")  # the marker folders of a session
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
    if len(session) <= 64 and _plain(session):
        return "s-" + session
    import hashlib

    return "h-" + hashlib.sha256(session.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def _dir(session: str, kind: str) -> Path:
    return state_dir() / "sessions" / key(session) / kind


def add(session: str, sid: str, *, queued: str | None = None, parent: str | None = None) -> None:
    """Record `sid` as a member (and active) of `session`, in creation order;
    `queued`: what the queue's marker of a subagent not started yet says
    (only characters of `_FACTS`), None for none; `parent`: whose subagent it
    is (`had_children`)."""
    stamp = f"{time.time_ns():020d}"
    parents = ensure_dir(_dir(session, "parents"))
    if not (parents / SINCE).exists():  # the first spawn that says its parent, from here on
        _write_once(parents / SINCE, stamp)
    if parent is not None and _plain(parent):
        (parents / parent).touch(mode=0o600)
    for kind in ("all", "active"):
        folder = ensure_dir(_dir(session, kind))
        (folder / f"{stamp}_{sid}").touch(mode=0o600)
    if queued is not None and _FACTS.issuperset(queued):
        ensure_dir(_dir(session, "queued")).joinpath(f"{stamp}.{queued}_{sid}").touch(mode=0o600)


_FACTS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.")  # a queue marker's, between the stamp and "_"
SINCE = "@since"  # in `parents/`: the creation stamp from which every member's parent is marked


def _write_once(path: Path, text: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:  # made by another spawn meanwhile (an earlier stamp), or unwritable
        return
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def queued(session: str) -> dict[str, str]:
    """id -> what its queue marker says, for each subagent of `session` not
    started yet by its marker (oldest first)."""
    return {sid: name.partition("_")[0].partition(".")[2] for sid, name in _names(session, "queued")[1]}


def unqueue(session: str, sid: str) -> None:
    """Its runner is about to start: it is queued no more."""
    for path in _members(session, "queued", sid):
        path.unlink(missing_ok=True)


def had_children(session: str, sid: str) -> bool:
    """Whether a subagent of `session` may name `sid` as its parent: one
    was spawned naming it (its marker), or a member still active was
    spawned before the session's spawns said their parent (by a zapcli
    before these markers: only its trail can tell). One of another session
    is not known (its trail never was read for this)."""
    folder = _dir(session, "parents")
    if (folder / sid).exists():
        return True
    try:
        with open(folder / SINCE, encoding="ascii") as fh:
            since = int(fh.read())
    except (OSError, ValueError):
        return True
    _, named = _names(session, "active")
    oldest = named[0][1].partition("_")[0] if named else ""
    return oldest.isdigit() and int(oldest) < since


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
    for kind in ("all", "active", "queued"):
        for path in _members(session, kind, sid):
            stamp = path.name.partition("_")[0].partition(".")[0]
            if stamp.isdigit() and int(stamp) < cutoff:
                path.unlink(missing_ok=True)


def deactivate(session: str, sid: str) -> None:
    """Drop `sid` from the active markers (it was seen terminal), and from the queued."""
    for kind in ("active", "queued"):
        for path in _members(session, kind, sid):
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
    if _plain(sid):
        (_dir(session, "parents") / sid).unlink(missing_ok=True)


def _plain(name: str) -> bool:
    """A name that is a file's name as it is: a session's key, a `parents/` marker."""
    return bool(name) and _SAFE.issuperset(name) and name not in (".", "..")


def forget_everywhere(sid: str, kinds: tuple[str, ...] = KINDS) -> None:
    """Drop the markers of `sid` (of `kinds`; with `active`, `queued` too) in
    every session: for a trail that lost its spawn record, which named its session."""
    if "active" in kinds:
        kinds = tuple(dict.fromkeys((*kinds, "queued")))
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
        if kinds == KINDS and _plain(sid):  # removed: whether it had subagents is nobody's question
            (root / k / "parents" / sid).unlink(missing_ok=True)


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
