"""Where Ray puts a subagent: one placement group `zapcli-<id>` per subagent,
its `ray.resources` as the one bundle, so Ray's scheduler picks the node and
keeps the room reserved while the runner runs (no worker process is held
for it); removed when it ends — but never while Ray prepares its bundles.

Imports `ray` (inside the pool's Ray job) and `ray_wire`. Groups are
detached: a pool that replaces a dead one finds a running subagent's group
by its name and frees it at its end.
"""

from __future__ import annotations

import time
from typing import Any

from zapcli.executors import ray_wire as wire

DOOMED_WAIT_S = 2.0  # a cancelled one's group is removed once placed, or after this long pending
# a group Ray has room for is ready a few ms after it is made: the tick that made it waits
# this long for it rather than leaving it to the next tick, TICK_S later (~100 ms a subagent)
SETTLE_S = 0.05


def existing(sid: str) -> Any:
    """Its group, made by this pool or an earlier one; None when there is none."""
    from ray.util.placement_group import get_placement_group

    try:
        return get_placement_group(wire.pg_name(sid))
    except ValueError:
        return None


def make(sid: str, bundle: dict[str, float]) -> Any:
    """Its group: an earlier pool's, or a new one."""
    from ray.util.placement_group import placement_group

    return existing(sid) or placement_group([bundle], name=wire.pg_name(sid), lifetime="detached")


def placed(subs: list[Any], settle: bool) -> list[Any]:
    """Of `subs` (each with its group `.pg`, being placed), those whose group
    Ray has placed; waiting up to SETTLE_S for them when `settle` (groups were
    just made). One `ray.wait` on the groups' ready refs (Ray answers those
    from its control store, no task runs), each ref asked for once per group."""
    import ray

    if not subs:
        return []
    by_ref: dict[Any, Any] = {}
    for sub in subs:
        ref = _ready.get(sub.pg.id)
        if ref is None:
            ref = _ready[sub.pg.id] = sub.pg.ready()
        by_ref[ref] = sub
    done, _ = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=SETTLE_S if settle else 0,
                       fetch_local=False)
    out = [by_ref[ref] for ref in done]
    for sub in out:
        _ready.pop(sub.pg.id, None)
    return out


_ready: dict[Any, Any] = {}  # group id -> its ready ref, while it is being placed


def node_of(pg: Any) -> str:
    """The node Ray placed a ready group on."""
    from ray.util.placement_group import placement_group_table

    return str(placement_group_table(pg)["bundles_to_node_id"][0])


def remove(pg: Any) -> None:
    from ray.util.placement_group import remove_placement_group

    _ready.pop(pg.id, None)
    try:
        remove_placement_group(pg)
    except Exception:  # noqa: BLE001 - already removed
        pass


class Doomed:
    """Groups of ones cancelled while Ray placed them: each is removed once
    placed — removing one while Ray prepares its bundles can leave them
    reserved for good (ray-project/ray #64693) — or once it has waited
    DOOMED_WAIT_S for room (nothing is being prepared for it then)."""

    def __init__(self) -> None:
        self.groups: list[tuple[Any, float]] = []

    def add(self, pg: Any) -> None:
        self.groups.append((pg, time.monotonic()))

    def tick(self) -> None:
        now, left = time.monotonic(), []
        for pg, since in self.groups:
            if pg.wait(0) or now - since > DOOMED_WAIT_S:
                remove(pg)
            else:
                left.append((pg, since))
        self.groups = left
