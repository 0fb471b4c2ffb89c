"""The lock on `zapcli mcp serve --http` (SPEC §18): every request carries
the server's secret (`Authorization: Bearer TOKEN`, compared in constant
time) or gets 401 before anything of zapcli runs; or the server listens on
a unix socket only its user may open (mode 0600).

Imports the standard library only (the ASGI gate is plain ASGI). The token
is made at start (`secrets.token_urlsafe`), or taken from ZAPCLI_MCP_TOKEN
for a client config that reads it from the environment, and written to
`<state>/mcp/http-PORT.token` (0600) for the clients of this user; the file
is removed when the server stops.
"""

from __future__ import annotations

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


def write_token(path: Path, token: str) -> None:
    """The token in a new 0600 file (its folder 0700), replacing a stale one."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def remove_token(path: Path, token: str) -> None:
    """Remove the file if it still holds our token (a newer server's stays)."""
    try:
        if path.read_text(encoding="utf-8").strip() == token:
            path.unlink()
    except OSError:
        pass


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
