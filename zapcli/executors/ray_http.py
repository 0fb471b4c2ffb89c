"""HTTP/1.1 over a plain socket, for the dashboard client (`ray_api`) when it
talks to an http:// dashboard directly (no proxy): what `http.client`
would do there, without its imports.

Imports `socket` only; `urllib.parse` for an address of another form
than `http(s)://host[:port]/path?query` (`split_url`): it brings `re`,
`ipaddress` and `warnings`, which a command's pathlib goes without
(`zapcli.lean`). `http.client` imports `email` (to parse headers) and
`ssl` (for a class it defines whatever the scheme): together more than
zapcli's whole start-up, paid by every command that looks at a remote
subagent (measured: `python -c 'import http.client'` about 25 ms on an idle
machine, and as much as the rest of a `spawn` on a loaded one). https://
and proxies keep `http.client` (`ray_api._open`).

`Connection` has the part of `http.client.HTTPConnection`'s interface
`ray_api._exchange` uses: `connect`, `request`, `getresponse` (a
`Response`: status, reason, headers, the body read whole — by its length,
in chunks, or up to the close), `will_close`, `sock`, `timeout`, `close`.
An answer that ends before its status line is `Dropped` (a kept
connection the dashboard closed meanwhile: sent again on a new one); one
that is damaged or past MAX_LINE, MAX_HEADERS, MAX_BODY is `Damaged`.
"""

from __future__ import annotations

import socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_LINE = 65536  # bytes in a status or header line
MAX_HEADERS = 100
MAX_BODY = 1 << 30  # no dashboard answer zapcli asks for comes near this


class Url:
    """The parts of `urllib.parse.SplitResult` the client uses."""

    __slots__ = ("scheme", "netloc", "path", "query", "hostname", "port")

    def __init__(self, scheme: str, netloc: str, path: str, query: str, hostname: str, port: int | None):
        self.scheme, self.netloc, self.path, self.query = scheme, netloc, path, query
        self.hostname, self.port = hostname, port

    def geturl(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.path}" + (f"?{self.query}" if self.query else "")


_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-~")


def split_url(url: str) -> Any:
    """`urllib.parse.urlsplit(url)`: parsed here in the plain form
    `http(s)://host[:port][/path][?query]` (a name or an IPv4 address, no
    user, no fragment), through urllib.parse in any other."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    host, colon, port = netloc.partition(":")
    path, _, query = (slash + tail).partition("?")
    plain = (sep and scheme.lower() in ("http", "https") and host and set(host) <= _HOST_CHARS
             and (not colon or (port.isascii() and port.isdigit() and int(port) <= 65535))
             and not any(c in path or c in query for c in "#\\ \t\r\n"))
    if not plain:
        import urllib.parse

        return urllib.parse.urlsplit(url)
    return Url(scheme.lower(), netloc, path, query, host.lower(), int(port) if colon else None)


def query(params: dict[str, object]) -> str:
    """`urllib.parse.urlencode(params)` (keys and values as `quote_plus` writes them)."""
    def quote(text: str) -> str:
        return "".join(chr(b) if b in _UNRESERVED else "+" if b == 32 else f"%{b:02X}"
                       for b in text.encode())

    return "&".join(f"{quote(str(k))}={quote(str(v))}" for k, v in params.items())


class Dropped(ConnectionResetError):
    """The connection ended before an answer began."""


class Damaged(ConnectionResetError):
    """An answer that is not HTTP/1.x, or that broke off in the middle."""


class Response:
    def __init__(self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes,
                 will_close: bool):
        self.status, self.reason, self._headers, self._body = status, reason, headers, body
        self.will_close = will_close

    def read(self) -> bytes:
        return self._body

    def getheaders(self) -> list[tuple[str, str]]:
        return list(self._headers)


class Connection:
    def __init__(self, host: str, port: int, timeout: float):
        self.host, self.port, self.timeout = host, port, timeout
        self.sock: socket.socket | None = None
        self._file: Any = None
        self._method = "GET"

    def connect(self) -> None:
        host: str | bytes = self.host.encode() if self.host.isascii() else self.host  # no `idna` codec
        self.sock = socket.create_connection((host, self.port), self.timeout)  # type: ignore[arg-type]
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._file = self.sock.makefile("rb")

    def close(self) -> None:
        for thing in (self._file, self.sock):
            if thing is not None:
                try:
                    thing.close()
                except OSError:
                    pass
        self._file = self.sock = None

    def request(self, method: str, target: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> None:
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        host = self.host if ":" not in self.host else f"[{self.host}]"
        given = {k.lower() for k in headers or {}}
        lines = [f"{method} {target} HTTP/1.1"]
        if "host" not in given:
            lines.append(f"Host: {host}:{self.port}" if self.port != 80 else f"Host: {host}")
        if "accept-encoding" not in given:
            lines.append("Accept-Encoding: identity")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body is not None and "content-length" not in given:
            lines.append(f"Content-Length: {len(body)}")
        for line in lines:
            if "\r" in line or "\n" in line:
                raise ValueError(f"a line break in an HTTP header: {line[:80]!r}")
        self._method = method
        self.sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + (body or b""))

    def getresponse(self) -> Response:
        status, reason, version = self._status()
        while 100 <= status < 200:  # an interim answer: its headers, then the real one
            self._headers()
            status, reason, version = self._status()
        headers = self._headers()
        fields = {k.lower(): v for k, v in headers}
        conn = fields.get("connection", "").lower()
        will_close = version == "HTTP/1.0" and "keep-alive" not in conn or "close" in conn
        if self._method == "HEAD" or status in (204, 304):
            return Response(status, reason, headers, b"", will_close)
        if "chunked" in fields.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in fields:
            try:
                length = int(fields["content-length"])
            except ValueError:
                raise Damaged(f"a Content-Length that is no number: {fields['content-length'][:40]!r}") from None
            if not 0 <= length <= MAX_BODY:
                raise Damaged(f"a Content-Length of {length}")
            body = self._exactly(length)
        else:  # to the close
            body = self._file.read(MAX_BODY + 1)
            if len(body) > MAX_BODY:
                raise Damaged("an answer of more than 1 GiB")
            will_close = True
        return Response(status, reason, headers, body, will_close)

    # -- reading --------------------------------------------------------------
    def _line(self) -> bytes:
        line = self._file.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise Damaged("a line of more than 64 KiB in the answer")
        return bytes(line)

    def _status(self) -> tuple[int, str, str]:
        line = self._line()
        if not line:
            raise Dropped("the dashboard closed the connection")
        parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise Damaged(f"not an HTTP answer: {line[:80]!r}")
        return int(parts[1]), parts[2] if len(parts) > 2 else "", parts[0]

    def _headers(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        while True:
            line = self._line()
            if not line:
                raise Damaged("the answer ended in its headers")
            if line in (b"\r\n", b"\n"):
                return out
            if len(out) >= MAX_HEADERS:
                raise Damaged(f"more than {MAX_HEADERS} headers in the answer")
            name, sep, value = line.decode("latin-1").partition(":")
            if sep:
                out.append((name.strip(), value.strip()))

    def _exactly(self, n: int) -> bytes:
        data = self._file.read(n) if n else b""
        if len(data) != n:
            raise Damaged(f"the answer ended after {len(data)} of its {n} bytes")
        return bytes(data)

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self._line()
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise Damaged(f"a chunk size that is no number: {line[:40]!r}") from None
            if size < 0:
                raise Damaged("a negative chunk size")
            if size == 0:
                while self._line() not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise Damaged("an answer of more than 1 GiB")
            parts.append(self._exactly(size))
            if self._line() not in (b"\r\n", b"\n"):
                raise Damaged("a chunk not followed by its line end")
