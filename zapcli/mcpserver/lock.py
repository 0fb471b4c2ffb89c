"""The lock on `zapcli mcp serve --http` (docs/explanation/rules.md#sandbox): every request carries
the server's secret (`Authorization: Bearer TOKEN`, compared in constant
time) or gets 401 before anything of zapcli runs; or the server listens on
a unix socket only its user may open (mode 0600).

Imports the standard library only (the ASGI gate is plain ASGI). The token
is made at start (`secrets.token_urlsafe`), or taken from ZAPCLI_MCP_TOKEN
for a client config that reads it from the environment, and written to
`<state>/mcp/http-PORT.token` (0600) for the clients of this user; the file
is removed when the server stops, and one a killed server left is removed
when the next one starts (the server holds a lock on its file while it runs).
"""

from __future__ import annotations

import fcntl
import hmac
import ipaddress
import os
import secrets
import socket
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

TOKEN_ENV = "ZAPCLI_MCP_TOKEN"
MIN_TOKEN = 24  # characters of a token given in ZAPCLI_MCP_TOKEN
Scope = MutableMapping[str, Any]
App = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
               Awaitable[None]]


class LockError(Exception):
    """A lock that cannot be set up: the message says why and what to do."""


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost` (every address it resolves to)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def make_token() -> str:
    """ZAPCLI_MCP_TOKEN when set (at least MIN_TOKEN characters), else a new one."""
    given = os.environ.get(TOKEN_ENV)
    if given is None:
        return secrets.token_urlsafe(32)
    if len(given) < MIN_TOKEN or not given.isprintable() or " " in given:
        raise LockError(f"{TOKEN_ENV} must be at least {MIN_TOKEN} printable characters without "
                        "spaces (e.g. from `openssl rand -hex 32`); unset it to get a new token "
                        "at every start")
    return given


def token_path(state: Path, port: int) -> Path:
    return state / "mcp" / f"http-{port}.token"


def write_token(path: Path, token: str) -> int:
    """The token in a new 0600 file (its folder 0700), replacing a stale one.
    Returns a descriptor of it holding its lock (`flock`) for as long as this
    server runs: a file nobody holds is a dead server's (`sweep_tokens`). The
    lock is taken before the file has its name, so no sweep sees it unheld."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.fchmod(fd, 0o600)
        os.write(fd, (token + "\n").encode())
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_token(path: Path, token: str, held: int | None = None) -> None:
    """Remove the file if it still holds our token (a newer server's stays);
    let go of its lock."""
    try:
        if path.read_text(encoding="utf-8").strip() == token:
            path.unlink()
    except OSError:
        pass
    if held is not None:
        os.close(held)


def sweep_tokens(state: Path) -> list[Path]:
    """Remove the token files of servers that are gone (SIGKILL, a crash, a
    reboot): one whose lock nobody holds, and that no server on its port
    answers for (a server of an earlier version held no lock); and temp
    files of a write that never finished. Returns what went."""
    folder = state / "mcp"
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    gone = []
    for name in names:
        path = folder / name
        if name.startswith(".http-") and ".token." in name:
            pid = name.rsplit(".", 1)[-1]
            if pid.isdigit() and not _alive(int(pid)):
                path.unlink(missing_ok=True)
                gone.append(path)
        elif name.startswith("http-") and name.endswith(".token") and _stale(path):
            gone.append(path)
    return gone


def _stale(path: Path) -> bool:
    """Remove `path` when no live server holds it; True when it went."""
    port = path.name[len("http-"):-len(".token")]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its server runs
        if port.isdigit() and _answers(int(port)):
            return False
        mine, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
        if (mine.st_ino, mine.st_dev) != (now.st_ino, now.st_dev):
            return False  # a new server wrote it meanwhile
        path.unlink()
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


UNAUTHORIZED = (b'{"error": "unauthorized", "message": "this zapcli MCP server needs its token: '
                b'send Authorization: Bearer <token> (zapcli mcp serve printed where the token '
                b'file is)"}')


class BearerGate:
    """ASGI: a request without `Authorization: Bearer <token>` is answered 401
    and goes no further (no session, no tool, nothing started)."""

    def __init__(self, app: App, token: str):
        self.app = app
        self._token = token.encode()

    def allowed(self, headers: list[tuple[bytes, bytes]]) -> bool:
        got = next((v for k, v in headers if k.lower() == b"authorization"), b"")
        scheme, _, value = got.strip().partition(b" ")
        ok_scheme = scheme.lower() == b"bearer"
        return hmac.compare_digest(value.strip(), self._token) and ok_scheme

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") in ("http", "websocket") and not self.allowed(scope.get("headers") or []):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="zapcli"'),
                (b"content-length", str(len(UNAUTHORIZED)).encode())]})
            await send({"type": "http.response.body", "body": UNAUTHORIZED})
            return
        await self.app(scope, receive, send)


def listen_unix(path: str) -> socket.socket:
    """A unix socket listening at `path`, mode 0600 from its creation on. A
    stale socket there is replaced; anything else there is refused."""
    where = Path(path)
    if not where.parent.is_dir():
        raise LockError(f"cannot listen on {path}: its folder does not exist")
    try:
        mode = where.lstat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISSOCK(mode):
            raise LockError(f"cannot listen on {path}: something that is not a socket is there; "
                            "give another path")
        with socket.socket(socket.AF_UNIX) as probe:
            if probe.connect_ex(path) == 0:
                raise LockError(f"cannot listen on {path}: another server is listening there")
        where.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        raise LockError(f"cannot listen on {path}: {(exc.strerror or str(exc)).lower()}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(2048)
    return sock
