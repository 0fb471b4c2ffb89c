"""What a queued subagent waits for, in a few words for `list` (`after
3f9a0c1e`, `cap 8`): a registry of reasons, asked in order.

Imports `zapcli.lifecycle.observe`, `zapcli.trail`. The queue (`queue.drain`)
decides when a subagent starts; this only says why one has not. A seam that
makes a subagent wait adds its reason to `REASONS` with `waits_for`, before
the cap, which is asked last; the queue's holds (`held`: a provider's rate
limit while two siblings are parked on it, an account's usage limit, an
endpoint's 429 burst) are one. A subagent its executor took but has not
started (a cluster with no room for it now) says the executor's words,
asked first.
"""

from __future__ import annotations

from zapcli.config import Settings
from zapcli.errors import NotFound
from zapcli.lifecycle.observe import observe
from zapcli.lifecycle.status import View
from zapcli.trail.model import SpawnRecord
from zapcli.trail.reader import load

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable

    Reason = Callable[[View, SpawnRecord, Settings], "str | None"]


def _out_there(view: View, *_: object) -> str | None:
    """Handed to its executor, which has not started it yet (`ray: placement
    pending 45s`): it waits for the cluster, not for zapcli's queue."""
    return view.queued_out_there


def _after(view: View, spawn: SpawnRecord, settings: Settings) -> str | None:
    """Its `--after` subagents that have not ended yet."""
    pending = []
    for dep in view.after:
        try:
            if not observe(dep, kill_grace_s=settings.kill_grace_s).terminal:
                pending.append(dep[-8:])
        except NotFound:  # the queue fails it for that at its next look
            continue
    return f"after {' '.join(pending)}" if pending else None


def held(view: View, *_: object) -> str | None:
    """The queue holds it back (`queue` writes a `held` record) while a
    provider's rate limit lasts (`… is rate-limiting 2 subagents, retry in
    12s`), its account's usage limit (`claude usage limit, resets 15:00`),
    or its endpoint's 429 burst (`… 2 at a time in this session until one
    succeeds`)."""
    if not view.held or not isinstance(until := view.held.get("until"), (int, float)):
        return None
    import time

    now = time.time()
    left = until - now
    if left <= 0:
        return None
    kind = view.held.get("kind")
    if kind == "usage_limit":
        from zapcli.resettime import when_text

        return f"{view.held.get('reason')}, {when_text(until, view.held.get('zone'), now, with_zone=False)}"
    if kind == "throttle":
        return str(view.held.get("reason"))
    return f"{view.held.get('reason')}, retry in {max(int(left + 0.999), 1)}s"


def _cap(view: View, spawn: SpawnRecord, settings: Settings) -> str | None:
    """The concurrency cap it was spawned under (its executor's own, if it has one)."""
    cap = settings.max_concurrent if spawn.max_concurrent is None else spawn.max_concurrent
    pool = spawn.raw.get("pool")
    if not cap:
        return "a free slot"  # unlimited: it starts at the next look
    return f"{pool} cap {cap}" if isinstance(pool, str) and pool else f"cap {cap}"


REASONS: list[Reason] = [_out_there, _after, held, _cap]


def waits_for(reason: Reason) -> Reason:
    """Add a reason, asked before the cap (usable as a decorator)."""
    REASONS.insert(len(REASONS) - 1, reason)
    return reason


def waiting_for(view: View, settings: Settings, spawn: SpawnRecord | None = None) -> str | None:
    """Why queued `view` has not started, in a few words (`spawn`: its spawn
    record, if read already); None if it cannot be read."""
    if spawn is None:
        try:
            spawn = load(view.id).spawn
        except NotFound:
            return None
    for reason in REASONS:
        said = reason(view, spawn, settings)
        if said:
            return said
    return None
