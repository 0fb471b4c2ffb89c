"""The Ray dashboard's HTTP API, as the Ray executor uses it — no `import ray`.

Imports the standard library and `zapcli.executors.base`. Everything goes to
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
HTTP_TIMEOUT_S). `RAY_JOB_HEADERS` (JSON, as Ray's SDK reads it) adds
headers, e.g. for a token-protected dashboard.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from zapcli.executors.base import ExecutorError

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


def _headers() -> dict[str, str]:
    raw = os.environ.get("RAY_JOB_HEADERS")
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {}


def call(addr: str, method: str, path: str, body: bytes | None = None, *,
         ctype: str | None = None, timeout: float = HTTP_TIMEOUT_S) -> Any:
    """One request; the parsed JSON answer (or the text). Raises OSError
    (urllib.error.URLError / HTTPError) or ValueError."""
    known = _unreachable.get(addr)
    if known and time.monotonic() - known[1] < UNREACHABLE_TTL_S:
        raise urllib.error.URLError(known[0])
    req = urllib.request.Request(addr + path, method=method,
                                 data=body if body is not None else (b"" if method != "GET" else None))
    for key, value in _headers().items():
        req.add_header(key, value)
    if ctype:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's cluster
            data = resp.read()
            kind = resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError:
        raise
    except OSError as exc:  # refused, timed out, no route: the same for the rest of this command
        _unreachable[addr] = (why(exc), time.monotonic())
        raise
    if "json" in kind:
        return json.loads(data)
    return data.decode("utf-8", "replace")


def post_json(addr: str, path: str, doc: Mapping[str, Any]) -> Any:
    return call(addr, "POST", path, json.dumps(doc).encode(), ctype="application/json")


def why(exc: BaseException) -> str:
    """An HTTP or network failure in a few words."""
    if isinstance(exc, urllib.error.HTTPError):
        try:
            detail = exc.read().decode("utf-8", "replace").strip().splitlines()[-1][:200]
        except (OSError, IndexError, ValueError):
            detail = ""
        return f"HTTP {exc.code} {exc.reason}" + (f": {detail}" if detail else "")
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
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
    except urllib.error.HTTPError as exc:
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
    except urllib.error.HTTPError as exc:
        if exc.code == 500 and "not found" in why(exc).lower():
            return None
        raise
    return text if isinstance(text, str) else json.dumps(text)


def put_package(addr: str, name: str, data: bytes, timeout: float = HTTP_TIMEOUT_S) -> None:
    """Store `data` in the cluster's GCS under gcs://NAME. Raises OSError/ValueError."""
    call(addr, "PUT", f"/api/packages/gcs/{name}", data, ctype="application/octet-stream",
         timeout=timeout)


def answer_lost(exc: BaseException) -> bool:
    """Whether a request that failed this way may have been carried out: it
    timed out or the connection dropped after it was sent (not: refused, no
    route, a clear HTTP error)."""
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, (ConnectionRefusedError, ConnectionAbortedError)) or \
            "refused" in str(reason).lower() or "name or service" in str(reason).lower():
        return False
    return isinstance(reason, (TimeoutError, ConnectionResetError, OSError)) or "timed out" in str(reason)
