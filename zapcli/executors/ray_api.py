"""The Ray dashboard's HTTP API, as the Ray executor uses it — no `import ray`.

Imports the standard library and `zapcli.executors.base`. Everything goes to
the dashboard address alone (`RAY_ADDRESS` or `ray.address`, what Ray's job
CLI reads, e.g. http://127.0.0.1:8265: often the only port a cluster
exposes), through the routes Ray's own job SDK uses (Ray 2.60):

- GET  /api/version                 is it a Ray cluster, which version
- PUT  /api/packages/gcs/NAME       store bytes in the cluster's GCS key-value
                                    store (how the SDK uploads a working_dir)
- POST /api/jobs/                   submit; GET /api/jobs/ID status;
  GET /api/jobs/ID/logs             the job's log; POST /api/jobs/ID/stop
- GET  /api/v0/nodes                the nodes (doctor)

So a command on the caller never pays Ray's import (0.7 s), and a cluster
that is gone fails fast (connection refused at once, a black hole after
HTTP_TIMEOUT_S). `RAY_JOB_HEADERS` (JSON, as Ray's SDK reads it) adds
headers, e.g. for a token-protected dashboard.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Mapping
from typing import Any

from zapcli.executors.base import ExecutorError

HTTP_TIMEOUT_S = 3.0
INBOX = "zapcli_in_"  # GCS key prefix (after gcs://) of records for a runner: zapcli_in_<id>_<seq>.json
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


def version(addr: str) -> str:
    """The cluster's Ray version. Raises ExecutorError (one line) when it does not answer."""
    try:
        info = call(addr, "GET", "/api/version")
        return str(info["ray_version"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExecutorError(f"cannot reach the Ray cluster at {addr} ({why(exc)}); {ADDRESS_HINT}") from None


def package(files: Mapping[str, bytes]) -> tuple[str, bytes]:
    """A working_dir package as Ray's SDK makes one: a zip named by the hash of
    its content (`_ray_pkg_<sha1>.zip`). Fixed timestamps, so the same files
    give the same package; files are 0600 on the node."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100600 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    data = buf.getvalue()
    return f"_ray_pkg_{hashlib.sha1(data).hexdigest()}.zip", data  # noqa: S324 - a name, as Ray's


def put_package(addr: str, name: str, data: bytes, timeout: float = HTTP_TIMEOUT_S) -> None:
    """Store `data` in the cluster's GCS under gcs://NAME. Raises OSError/ValueError."""
    call(addr, "PUT", f"/api/packages/gcs/{name}", data, ctype="application/octet-stream",
         timeout=timeout)


def inbox_name(sid: str, seq: int) -> str:
    return f"{INBOX}{sid}_{seq:09d}.json"
