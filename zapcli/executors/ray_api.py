"""The Ray dashboard's HTTP API, as the Ray executor uses it — no `import ray`.

Imports the standard library, orjson and `zapcli.executors.base`. Everything goes to
the dashboard address alone (`RAY_ADDRESS` or `ray.address`, what Ray's job
CLI reads, e.g. http://127.0.0.1:8265: often the only port a cluster
exposes), through the routes Ray's own job SDK uses (Ray 2.60):

- GET  /api/version                 is it a Ray cluster, which version and
                                    session (a restarted cluster has a new one)
- PUT  /api/packages/gcs/NAME       store bytes in the cluster's GCS key-value
                                    store (how the SDK uploads a working_dir; the
                                    one route here that Ray does not document)
- POST /api/jobs/                   submit (the pool); GET /api/jobs/ID status;
  GET /api/jobs/ID/logs             the job's log; DELETE /api/jobs/ID
- GET  /api/v0/logs/file            the last lines of a file in a node's Ray log
                                    folder (the pool's status and frames)
- GET  /api/v0/nodes                the nodes (doctor)

So a command on the caller never pays Ray's import (0.7 s), and a cluster
that is gone fails fast (connection refused at once, a black hole after
HTTP_TIMEOUT_S). The few HTTP/1.1 exchanges it needs (one request per
connection, an answer with a length or in chunks) go over a socket:
`http.client` and `urllib.request` bring email, ssl, random, calendar and
more, about twice a bare interpreter's start, into every command that looks
at a remote subagent (`ssl` is imported only for an https dashboard).
`RAY_JOB_HEADERS` (JSON, as Ray's SDK reads it) adds headers, e.g. for a
token-protected dashboard.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Mapping

from zapcli.executors.base import ExecutorError
from zapcli.trail import jsonl

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

HTTP_TIMEOUT_S = 3.0
ADDRESS_HINT = ("check RAY_ADDRESS or ray.address (the Ray dashboard's address, "
                "e.g. http://127.0.0.1:8265)")

UNREACHABLE_TTL_S = 10.0
_unreachable: dict[str, tuple[str, float]] = {}  # address -> (why, when): not asked again per subagent


def address(options: Mapping[str, Any] | None) -> str:
    """The dashboard address: RAY_ADDRESS, else `ray.address`; http:// added
    to a bare host:port, as Ray's job CLI does. Raises ExecutorError."""
    addr = os.environ.get("RAY_ADDRESS") or str((options or {}).get("address") or "")
    if not addr:
        raise ExecutorError("no Ray cluster given: set RAY_ADDRESS or ray.address in config.yaml "
                            "to the dashboard address, e.g. http://127.0.0.1:8265")
    if addr.startswith("ray://") or "://" in addr and not addr.startswith(("http://", "https://")):
        raise ExecutorError(f"RAY_ADDRESS / ray.address {addr!r} is not the dashboard's http address; "
                            + ADDRESS_HINT)
    if "://" not in addr:
        addr = "http://" + addr
    return addr.rstrip("/")


class HTTPError(OSError):
    """The dashboard answered with an error status."""

    def __init__(self, code: int, reason: str, body: bytes):
        super().__init__(f"HTTP {code} {reason}")
        self.code, self.reason, self.body = code, reason, body


class Unreachable(OSError):
    """Not sent: this command already found the address unreachable."""


def _headers() -> dict[str, str]:
    raw = os.environ.get("RAY_JOB_HEADERS")
    if not raw:
        return {}
    try:
        parsed = jsonl.loads(raw.encode())
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


def _connect(addr: str, timeout: float) -> Any:
    import socket

    url = urllib.parse.urlsplit(addr)
    tls = url.scheme == "https"
    sock = socket.create_connection((url.hostname or "", url.port or (443 if tls else 80)), timeout=timeout)
    if tls:
        import ssl

        try:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=url.hostname)
        except OSError:
            sock.close()
            raise
    return sock


def _exchange(sock: Any, addr: str, method: str, target: str, body: bytes | None,
              headers: dict[str, str]) -> tuple[int, str, dict[str, str], bytes]:
    """One request on its own connection: (status, reason, headers, body)."""
    url = urllib.parse.urlsplit(addr)
    try:
        head = [f"{method} {url.path}{target} HTTP/1.1", f"Host: {url.netloc}", "Connection: close",
                *(f"{k}: {v}" for k, v in headers.items())]
        if body is not None:
            head.append(f"Content-Length: {len(body)}")
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (body or b""))
        got = []
        while data := sock.recv(1 << 16):
            got.append(data)
    finally:
        sock.close()
    return _parse(b"".join(got))


def _parse(raw: bytes) -> tuple[int, str, dict[str, str], bytes]:
    head, sep, rest = raw.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split(b" ", 2)
    if not sep or len(status) < 2 or not status[1].isdigit():
        raise ConnectionResetError("the dashboard's answer ended early" if raw else "no answer")
    fields = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        rest = _unchunk(rest)
    elif fields.get("content-length", "").isdigit():
        rest = rest[:int(fields["content-length"])]
    return int(status[1]), (status[2] if len(status) > 2 else b"").decode("latin-1"), fields, rest


def _unchunk(data: bytes) -> bytes:
    out: list[bytes] = []
    at = 0
    try:
        while True:
            end = data.index(b"\r\n", at)
            size = int(data[at:end].split(b";")[0], 16)
            if size == 0:
                return b"".join(out)
            out.append(data[end + 2:end + 2 + size])
            at = end + 2 + size + 2
    except ValueError:
        raise ConnectionResetError("the dashboard's answer ended mid-way") from None


def call(addr: str, method: str, path: str, body: bytes | None = None, *,
         ctype: str | None = None, timeout: float = HTTP_TIMEOUT_S) -> Any:
    """One request; the parsed JSON answer (or the text). Raises OSError
    (HTTPError for an error status) or ValueError."""
    known = _unreachable.get(addr)
    if known and time.monotonic() - known[1] < UNREACHABLE_TTL_S:
        raise Unreachable(known[0])
    headers = {**_headers(), **({"Content-Type": ctype} if ctype else {})}
    try:
        sock = _connect(addr, timeout)
    except OSError as exc:  # refused, no route, a black hole: the same for the rest of this command
        _unreachable[addr] = (why(exc), time.monotonic())
        raise
    try:
        status, reason, fields, data = _exchange(
            sock, addr, method, path, body if body is not None or method == "GET" else b"", headers)
    except TimeoutError as exc:  # a read that gets no answer: so will the next ones (a write's
        if method == "GET":      # answer may just be late: it is looked up, not given up on)
            _unreachable[addr] = (why(exc), time.monotonic())
        raise
    if status >= 400:
        raise HTTPError(status, reason, data)
    if "json" in fields.get("content-type", ""):
        return jsonl.loads(data)
    return data.decode("utf-8", "replace")


def post_json(addr: str, path: str, doc: Mapping[str, Any]) -> Any:
    return call(addr, "POST", path, jsonl.dumps(doc), ctype="application/json")


def why(exc: BaseException) -> str:
    """An HTTP or network failure in a few words."""
    if isinstance(exc, HTTPError):
        lines = exc.body.decode("utf-8", "replace").strip().splitlines()
        detail = lines[-1][:200] if lines else ""
        return f"HTTP {exc.code} {exc.reason}" + (f": {detail}" if detail else "")
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def version(addr: str) -> tuple[str, str]:
    """(the cluster's Ray version, its session name). Raises ExecutorError
    (one line) when it does not answer."""
    try:
        info = call(addr, "GET", "/api/version")
        return str(info["ray_version"]), str(info.get("session_name") or "")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExecutorError(f"cannot reach the Ray cluster at {addr} ({why(exc)}); {ADDRESS_HINT}") from None


def job(addr: str, job_id: str) -> dict[str, Any] | None:
    """A job's details; None when the cluster has no such job. Raises OSError/ValueError."""
    try:
        info = call(addr, "GET", f"/api/jobs/{job_id}")
    except HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    return info if isinstance(info, dict) else None


def tail(addr: str, node_id: str, filename: str, lines: int, timeout: float = HTTP_TIMEOUT_S) -> str | None:
    """The last `lines` lines of a file in a node's Ray log folder; None
    when it does not exist. Raises OSError/ValueError."""
    query = urllib.parse.urlencode({"node_id": node_id, "filename": filename, "lines": lines})
    try:
        text = call(addr, "GET", f"/api/v0/logs/file?{query}", timeout=timeout)
    except HTTPError as exc:
        if exc.code == 500 and "not found" in why(exc).lower():
            return None
        raise
    return text if isinstance(text, str) else jsonl.dumps(text).decode()


def put_package(addr: str, name: str, data: bytes, timeout: float = HTTP_TIMEOUT_S) -> None:
    """Store `data` in the cluster's GCS under gcs://NAME. Raises OSError/ValueError."""
    call(addr, "PUT", f"/api/packages/gcs/{name}", data, ctype="application/octet-stream",
         timeout=timeout)


def answer_lost(exc: BaseException) -> bool:
    """Whether a request that failed this way may have been carried out: it
    timed out or the connection dropped after it was sent (not: refused, no
    route, not sent at all, a clear HTTP error)."""
    import errno
    import socket

    if isinstance(exc, HTTPError):
        return exc.code >= 500
    if isinstance(exc, (Unreachable, ConnectionRefusedError, socket.gaierror)) or \
            getattr(exc, "errno", None) in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return False
    return isinstance(exc, OSError)
