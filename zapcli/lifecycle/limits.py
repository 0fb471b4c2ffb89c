"""What holds subagents back in the queue for their provider's sake: an
account's usage limit until it resets (C42), and an endpoint that answered
a burst of 429s before any work was done, whose concurrency in the session
is halved until one of its subagents succeeds (C43).

Imports `zapcli.paths`, `zapcli.lifecycle.session` (its folder), `zapcli.trail`. Runners
say what happened (`limited`, `throttled`, `succeeded`); the queue asks
before it starts a subagent (`hold`), and writes what it says in the
subagent's trail (a `held` record), so poll, list and top show why it
waits. An account is the same account in every session, so its limit is
kept once, in `<state>/limits/`; an endpoint's throttle belongs to the
session whose burst it was, in that session's folder. Each is one small
JSON file, written whole (temp file + rename); a file that cannot be read
holds nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from zapcli.lifecycle import session as sessions
from zapcli.paths import ensure_dir, state_dir, write_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BURST_S = 10.0  # 429s this close to the last halving are the same burst: halved once
HELD_FOR_S = 30.0  # a throttle's `held` record is said again after this long, while it holds


def _key(*parts: str) -> str:
    import hashlib  # only where a limit is kept or asked about: spawn stays light

    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _usage_path(cli: str, account: str) -> Path:
    return state_dir() / "limits" / f"usage-{_key(cli, account)}.json"


def _throttles_in(session: str) -> Path:
    return state_dir() / "sessions" / sessions.key(session)


def _throttle_path(session: str, endpoint: str) -> Path:
    return _throttles_in(session) / f"throttle-{_key(endpoint)}.json"


def _read(path: Path) -> dict[str, Any] | None:
    import json  # only where a limit is kept or asked about: `json` brings `re`, spawn stays light

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _write(path: Path, doc: dict[str, Any]) -> None:
    import json

    ensure_dir(path.parent)
    write_private(path, json.dumps(doc).encode(), sync=False)


# -- an account's usage limit (C42) ------------------------------------------

def limited(cli: str, account: str, resets_at: float, zone: str | None, message: str,
            by: str) -> None:
    """`cli` on `account` met its usage limit (said by subagent `by`): its
    next subagents wait until `resets_at` (epoch seconds). A later reset
    than the one kept wins (a weekly limit behind a session one)."""
    path = _usage_path(cli, account)
    kept = _read(path)
    if kept and isinstance(kept.get("resets_at"), (int, float)) and kept["resets_at"] >= resets_at:
        return
    _write(path, {"cli": cli, "account": account, "resets_at": resets_at, "zone": zone,
                  "message": message[:600], "by": by, "at": time.time()})


def usage_limit(cli: str, account: str, now: float | None = None) -> dict[str, Any] | None:
    """The usage limit `cli` on `account` is under, until it resets; else None."""
    kept = _read(_usage_path(cli, account))
    now = time.time() if now is None else now
    if kept and isinstance(kept.get("resets_at"), (int, float)) and kept["resets_at"] > now:
        return kept
    return None


# -- an endpoint's burst of 429s (C43) ---------------------------------------

def throttled(session: str, endpoint: str, running: int, why: str) -> int:
    """A subagent of `session` on `endpoint` ended on a 429 (or an overloaded
    answer) before doing any work, while `running` of the session's ran
    there (itself included): the endpoint's concurrency in the session is
    halved — once per burst — until one succeeds. Returns the new limit."""
    path = _throttle_path(session, endpoint)
    kept = _read(path) or {}
    now = time.time()
    limit = kept.get("limit") if isinstance(kept.get("limit"), int) else None
    since = float(kept["since"]) if isinstance(kept.get("since"), (int, float)) else 0.0
    if limit is not None and now - since < BURST_S:
        count = int(kept.get("count") or 1) + 1
    else:
        limit, since, count = max(min(limit or running, running) // 2, 1), now, \
            int(kept.get("count") or 0) + 1
    _write(path, {"endpoint": endpoint, "limit": limit, "since": since, "count": count,
                  "why": why[:300]})
    return limit


def running_on(session: str, endpoint: str) -> int:
    """How many of `session`'s subagents run on `endpoint` now (a look at
    each active one's trail: only on the rare way into a throttle)."""
    from zapcli.errors import NotFound
    from zapcli.trail.reader import load

    count = 0
    for sid in sessions.active(session):
        try:
            s = load(sid)
        except NotFound:
            continue
        if s.final is None and s.runner is not None and s.spawn.raw.get("provider") == endpoint:
            count += 1
    return count


def throttle(session: str, endpoint: str) -> dict[str, Any] | None:
    """The session's throttle on `endpoint`, while it holds."""
    try:  # none in the session (nearly always): no key to hash, hashlib stays unloaded
        if not any(n.startswith("throttle-") for n in os.listdir(_throttles_in(session))):
            return None
    except OSError:
        return None
    return _read(_throttle_path(session, endpoint))


def succeeded(session: str, endpoint: str) -> bool:
    """A subagent of `session` on `endpoint` got an answer with tokens: its
    throttle is lifted. True when there was one."""
    try:
        os.unlink(_throttle_path(session, endpoint))
    except OSError:
        return False
    return True


# -- the queue's question ----------------------------------------------------

def hold(raw: dict[str, Any], session: str, on_endpoint: int,
         now: float | None = None) -> dict[str, Any] | None:
    """Why a queued subagent (its spawn record `raw`) must not start now:
    the fields of its `held` record, or None. `on_endpoint`: how many of the
    session's subagents run on its endpoint."""
    now = time.time() if now is None else now
    cli, account = raw.get("cli"), raw.get("account")
    if isinstance(cli, str) and isinstance(account, str):
        limit = usage_limit(cli, account, now)
        if limit is not None:
            return {"kind": "usage_limit", "reason": f"{cli} usage limit", "cli": cli,
                    "until": limit["resets_at"], "zone": limit.get("zone"),
                    "message": limit.get("message")}
    endpoint = raw.get("provider")
    if isinstance(endpoint, str) and endpoint:
        kept = throttle(session, endpoint)
        limit = kept.get("limit") if kept else None
        if isinstance(limit, int) and on_endpoint >= limit:
            count = int(kept.get("count") or 1) if kept else 1
            return {"kind": "throttle", "provider": endpoint, "limit": limit,
                    "until": now + HELD_FOR_S,
                    "reason": f"{endpoint} answered 429 with no work done ({count}×): "
                              f"{limit} at a time in this session until one succeeds"}
    return None
