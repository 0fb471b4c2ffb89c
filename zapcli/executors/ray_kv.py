"""The one place zapcli uses Ray API that is not public (Ray 2.60): the
cluster's key-value store, from the pool's side.

Imports `ray` (this runs inside the pool's Ray job). Ray has no public
key-value API: the caller can write keys only through the dashboard route
Ray's own job SDK uses to upload packages (`PUT /api/packages/gcs/NAME`,
landing as `gcs://NAME`), and the pool reads, lists, claims and deletes
them with `ray.experimental.internal_kv` (underscore names: internal). The
pool needs exactly four operations; `problems()` checks that each still
exists and behaves as the pool relies on, and tests/ray runs it against
the real cluster, so a Ray upgrade that changes them fails loudly there
instead of silently in a pool.

Everything else the pool uses is public: `ray.init` (whose context names
the session folder, where the dashboard serves log files from), actors,
placement groups, `ray.nodes()`, `ray.get_runtime_context()`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TESTED_RAY = "2.60"


def _kv() -> Any:
    from ray.experimental import internal_kv

    return internal_kv


def kv_list(prefix: str) -> list[str]:
    return [k.decode() for k in _kv()._internal_kv_list(prefix.encode())]


def kv_get(key: str) -> bytes | None:
    value = _kv()._internal_kv_get(key.encode())
    return bytes(value) if value is not None else None


def kv_claim(key: str, value: bytes) -> bool:
    """Store `value` under `key` unless the key exists: True when this call
    stored it (the store decides atomically: one caller wins)."""
    existed = _kv()._internal_kv_put(key.encode(), value, overwrite=False)
    return not existed


def kv_del(key: str) -> None:
    _kv()._internal_kv_del(key.encode())


def logs_dir(context: Any) -> Path:
    """This node's Ray log folder (what `GET /api/v0/logs/file` serves),
    from the context `ray.init` returned."""
    return Path(context.address_info["session_dir"]) / "logs"


def problems(context: Any) -> list[str]:
    """What no longer holds of the above on this Ray (empty: all of it).
    Needs a connected Ray; leaves nothing behind."""
    import ray

    out = []
    if not ray.__version__.startswith(TESTED_RAY + "."):
        out.append(f"Ray {ray.__version__}: the pool was tested with Ray {TESTED_RAY}")
    try:
        kv = _kv()
        for name in ("_internal_kv_list", "_internal_kv_get", "_internal_kv_put", "_internal_kv_del"):
            if not callable(getattr(kv, name, None)):
                out.append(f"ray.experimental.internal_kv.{name} is gone")
        probe = f"zapcli/probe/{ray.get_runtime_context().get_job_id()}"
        first, second = kv_claim(probe, b"1"), kv_claim(probe, b"2")
        if (first, second) != (True, False) or kv_get(probe) != b"1":
            out.append("internal_kv put(overwrite=False) no longer claims a key once")
        if probe not in kv_list("zapcli/probe/"):
            out.append("internal_kv list(prefix) no longer lists a key")
        kv_del(probe)
        if kv_get(probe) is not None:
            out.append("internal_kv del no longer deletes")
    except Exception as exc:  # noqa: BLE001 - every change is a finding
        out.append(f"the key-value store failed: {type(exc).__name__}: {exc}")
    try:
        if not logs_dir(context).is_dir():
            out.append(f"ray.init's session_dir has no logs folder ({logs_dir(context)})")
    except (AttributeError, KeyError, TypeError) as exc:
        out.append(f"ray.init's context no longer names the session folder ({exc!r})")
    return out
