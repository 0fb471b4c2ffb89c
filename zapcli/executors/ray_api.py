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
HTTP_TIMEOUT_S). The exchanges are HTTP/1.1 with keep-alive (one
connection per address and thread, used again by the next request of the
command), answers with a length or in chunks: straight to an http://
dashboard through `ray_http` (a socket; `http.client` would import `email`
and `ssl`, as much as the rest of a command), through `http.client` to an
https:// one or a proxy. A proxy is chosen as urllib chooses it
(`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, upper or lower
case; `urllib.request` is imported only when one of them is set): an
http:// dashboard is asked through the proxy, an
https:// one through a CONNECT tunnel. Redirects (301, 302, 303, 307, 308)
are followed up to MAX_REDIRECTS, dropping `RAY_JOB_HEADERS` when they lead
to another origin. Why not httpx (installed with the openai SDK): it does all
of this but costs about 60 ms more than `http.client` at import (measured:
`python -S -c 'import httpx2'` 80 ms, `import http.client` 30 ms, a bare
interpreter under 10 ms), paid by every command that looks at a remote
subagent. `http.client` and `ssl` are imported only for an https
dashboard or a proxy; `urllib.parse` (which brings `re` and `ipaddress`,
kept out of every command by `zapcli.lean`) only for a proxy, a redirect
or an address of another form than `http(s)://host:port`.
`RAY_JOB_HEADERS` (JSON, as Ray's SDK reads it) adds headers, e.g. for a
token-protected dashboard.
"""

from __future__ import annotations

import os
import time
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


def ray_installed() -> str | None:
    """The version of Ray's own package in this Python (the `ray` extra), or
    None when it is not installed. Found without importing it (seconds)."""
    from importlib import metadata, util

    try:
        if util.find_spec("ray") is None:
            return None
        return metadata.version("ray")
    except (ImportError, ValueError, metadata.PackageNotFoundError):
        return None


INSTALL_HINT = ("Ray is not installed here: to start a cluster on this machine, "
                "pip install 'zapcli[ray]', then ray start --head")


def _hint() -> str:
    """What to add to a 'no cluster' error: the extra, when Ray is not installed."""
    return "" if ray_installed() else "; " + INSTALL_HINT


def address(options: Mapping[str, Any] | None) -> str:
    """The dashboard address: RAY_ADDRESS, else `ray.address`; http:// added
    to a bare host:port, as Ray's job CLI does. Raises ExecutorError."""
    addr = os.environ.get("RAY_ADDRESS") or str((options or {}).get("address") or "")
    if not addr:
        raise ExecutorError("no Ray cluster given: set RAY_ADDRESS or ray.address in config.yaml "
                            "to the dashboard address, e.g. http://127.0.0.1:8265" + _hint())
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


class NotConnected(OSError):
    """Not sent: no connection could be made (refused, no route, no such
    host, no answer to the connect, a proxy that refused the tunnel). Its
    text is the cause's."""


def _headers() -> dict[str, str]:
    raw = os.environ.get("RAY_JOB_HEADERS")
    if not raw:
        return {}
    try:
        parsed = jsonl.loads(raw.encode())
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


MAX_REDIRECTS = 5
_REDIRECTS = (301, 302, 303, 307, 308)
_local: Any = None  # per thread: {(scheme, host, port, proxy): HTTPConnection} kept alive


def _proxy_for(url: Any) -> str | None:
    """The proxy for `url` from the environment, as urllib picks it (None:
    go direct). Nothing is imported unless a *_proxy variable is set."""
    if not any(k.lower().endswith("_proxy") for k in os.environ):
        return None
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    if urllib.request.proxy_bypass_environment(url.hostname or "", proxies):  # type: ignore[attr-defined]
        return None
    return proxies.get(url.scheme) or proxies.get("all") or None


def _connections() -> dict[tuple[str, str, int, str | None], Any]:
    global _local
    if _local is None:
        from _thread import _local as thread_local  # threading.local itself, without `threading`

        _local = thread_local()
    if not hasattr(_local, "conns"):
        _local.conns = {}
    return _local.conns  # type: ignore[no-any-return]


def _open(url: Any, proxy: str | None, timeout: float) -> Any:
    """A new connection to `url`'s host, through `proxy` when given."""
    tls = url.scheme == "https"
    host, port = url.hostname or "", url.port or (443 if tls else 80)
    if proxy is None and not tls:
        from zapcli.executors import ray_http

        return ray_http.Connection(host, port, timeout)
    import http.client
    import urllib.parse

    context = None
    if tls:
        import ssl

        context = ssl.create_default_context()
    if proxy is None:
        if tls:
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        return http.client.HTTPConnection(host, port, timeout=timeout)
    p = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
    if p.scheme != "http":
        raise OSError(f"proxy {p.scheme}://{p.hostname}: only an http:// proxy is supported")
    if not tls:  # the proxy is asked for the whole URL
        return http.client.HTTPConnection(p.hostname or "", p.port or 80, timeout=timeout)
    conn = http.client.HTTPSConnection(p.hostname or "", p.port or 80, timeout=timeout,
                                       context=context)
    conn.set_tunnel(host, port, headers=_proxy_auth(p))
    return conn


def _proxy_auth(p: Any) -> dict[str, str]:
    """`Proxy-Authorization` for a proxy URL with user:password in it."""
    if p.username is None:
        return {}
    import base64
    import urllib.parse

    pair = f"{urllib.parse.unquote(p.username)}:{urllib.parse.unquote(p.password or '')}"
    return {"Proxy-Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}


def _exchange(url: Any, method: str, body: bytes | None,
              headers: dict[str, str], timeout: float) -> tuple[int, str, dict[str, str], bytes]:
    """One request: (status, reason, headers lower-cased, body). A connection
    kept from an earlier request is used again; if it turns out closed by
    the dashboard meanwhile, an idempotent request (not POST: a job is
    submitted once) is sent once more on a new one."""
    proxy = _proxy_for(url)
    key = (url.scheme, url.hostname or "", url.port or 0, proxy)
    conns = _connections()
    kept = conns.pop(key, None) if method != "POST" else None
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    if proxy is not None and url.scheme == "http":
        import urllib.parse

        target = urllib.parse.urlunsplit((url.scheme, url.netloc, url.path or "/", url.query, ""))
        headers = {**headers, **_proxy_auth(urllib.parse.urlsplit(
            proxy if "://" in proxy else "http://" + proxy))}
    for conn in ([kept] if kept is not None else []) + [None]:
        fresh = conn is None
        if conn is None:
            conn = _open(url, proxy, timeout)
            try:
                conn.connect()
            except OSError as exc:
                conn.close()
                raise NotConnected(*exc.args) from exc
        else:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
        try:
            conn.request(method, target, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except Exception as exc:
            conn.close()
            if _damaged(exc):  # as a dropped connection, but not sent again
                raise ConnectionResetError(f"the dashboard's answer ended early ({exc!r})") from None
            if not isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                raise
            if fresh:
                raise ConnectionResetError(str(exc) or "the dashboard closed the connection") from None
            continue  # the kept one had been closed by the dashboard: a new one
        except BaseException:
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            conns[key] = conn
        fields = {k.lower(): v for k, v in resp.getheaders()}
        return resp.status, resp.reason, fields, data
    raise ConnectionResetError("no answer")  # not reached: the last try is a fresh connection


def _damaged(exc: BaseException) -> bool:
    """A damaged answer (not one that never began: that is a closed connection)."""
    import sys

    from zapcli.executors.ray_http import Damaged

    client = sys.modules.get("http.client")  # imported only when it carried the exchange
    return isinstance(exc, Damaged) or (client is not None and isinstance(exc, client.HTTPException)
                                        and not isinstance(exc, ConnectionResetError))


def _request(addr: str, method: str, path: str, body: bytes | None, headers: dict[str, str],
             timeout: float) -> tuple[int, str, dict[str, str], bytes]:
    """`_exchange`, following redirects."""
    from zapcli.executors.ray_http import split_url

    base = split_url(addr)
    url = split_url(addr + path)
    for _hop in range(MAX_REDIRECTS + 1):
        status, reason, fields, data = _exchange(url, method, body, headers, timeout)
        if status not in _REDIRECTS or not fields.get("location"):
            return status, reason, fields, data
        import urllib.parse

        nxt = urllib.parse.urlsplit(urllib.parse.urljoin(url.geturl(), fields["location"]))
        if nxt.scheme not in ("http", "https"):
            raise HTTPError(status, f"{reason} to {nxt.scheme}:, not followed", data)
        if status == 303 or (status in (301, 302) and method == "POST"):
            method, body = "GET", None  # as browsers and urllib do
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        if (nxt.scheme, nxt.netloc) != (base.scheme, base.netloc):
            headers = {k: v for k, v in headers.items() if k in ("Content-Type",)}
        url = nxt
    raise HTTPError(status, f"{reason}: more than {MAX_REDIRECTS} redirects", b"")


def call(addr: str, method: str, path: str, body: bytes | None = None, *,
         ctype: str | None = None, timeout: float = HTTP_TIMEOUT_S) -> Any:
    """One request; the parsed JSON answer (or the text). Raises OSError
    (HTTPError for an error status) or ValueError."""
    known = _unreachable.get(addr)
    if known and time.monotonic() - known[1] < UNREACHABLE_TTL_S:
        raise Unreachable(known[0])
    headers = {**_headers(), **({"Content-Type": ctype} if ctype else {})}
    try:
        status, reason, fields, data = _request(
            addr, method, path, body if body is not None or method == "GET" else b"", headers, timeout)
    except TimeoutError as exc:  # a read that gets no answer: so will the next ones (a write's
        if method == "GET":      # answer may just be late: it is looked up, not given up on)
            _unreachable[addr] = (why(exc), time.monotonic())
        raise
    except NotConnected as exc:  # refused, no route, a black hole: the same for the rest of
        _unreachable[addr] = (why(exc), time.monotonic())  # this command
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
    if isinstance(exc, TimeoutError) or isinstance(exc.__cause__, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def version(addr: str) -> tuple[str, str]:
    """(the cluster's Ray version, its session name). Raises ExecutorError
    (one line) when it does not answer."""
    try:
        info = call(addr, "GET", "/api/version")
        return str(info["ray_version"]), str(info.get("session_name") or "")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExecutorError(f"cannot reach the Ray cluster at {addr} ({why(exc)}); {ADDRESS_HINT}"
                            + _hint()) from None


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
    from zapcli.executors.ray_http import query as encode

    query = encode({"node_id": node_id, "filename": filename, "lines": lines})
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
    if isinstance(exc, (Unreachable, NotConnected, ConnectionRefusedError, socket.gaierror)) or \
            getattr(exc, "errno", None) in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return False
    return isinstance(exc, OSError)
