"""Where Ray puts a subagent: one placement group `zapcli-<id>` per subagent,
its `ray.resources` as the one bundle, so Ray's scheduler picks the node and
keeps the room reserved while the runner runs (no worker process is held
for it); removed when it ends — but never while Ray may be preparing its
bundles (`Doomed`).

Imports `ray` (inside the pool's Ray job) and `ray_wire`. Groups are
detached: a pool that replaces a dead one finds a running subagent's group
by its name and frees it at its end.
"""

from __future__ import annotations

import time
from typing import Any

from zapcli.executors import ray_wire as wire

DOOMED_LOOK_S = 1.0  # how often a doomed group Ray has not placed is looked up (is it infeasible?)
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
    """Groups to remove, each removed only when no bundle of it can be in
    the middle of being prepared: once Ray placed it (its ready ref
    resolved), or while no node could ever hold it (INFEASIBLE). Removing a
    group while Ray prepares its bundles (a kill or an end landing between
    the group's creation and its placement, seconds under load) can leave
    those bundles reserved on the node for good and stop Ray from placing
    any later group of the cluster (ray-project/ray #64693); and
    `pg.wait(0)` says False even for a placed group, so only the ready ref
    tells. A group stays here until Ray's record says it is removed (a
    removal that failed is asked again), and the pool lives until this is
    empty. Adding one twice, or one already removed, is harmless."""

    def __init__(self) -> None:
        self.groups: dict[Any, list[Any]] = {}  # group id -> [group, removal asked, last looked up]

    def __len__(self) -> int:
        return len(self.groups)

    def add(self, pg: Any, placed: bool = False) -> None:
        """`placed`: the caller knows Ray placed it (its runner was started
        on its node): removed now, else once its ready ref says so."""
        if pg.id not in self.groups:
            self.groups[pg.id] = [pg, False, time.monotonic()]
            if placed:
                self._remove(pg.id)

    def tick(self) -> None:
        import ray

        waiting = {gid: entry[0] for gid, entry in self.groups.items() if not entry[1]}
        if waiting:
            by_ref: dict[Any, Any] = {}
            for gid, pg in waiting.items():
                ref = _ready.get(gid)
                if ref is None:
                    ref = _ready[gid] = pg.ready()
                by_ref[ref] = gid
            done, _ = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=0, fetch_local=False)
            for ref in done:  # placed: nothing of it is being prepared any more
                self._remove(by_ref[ref])
        now = time.monotonic()
        for gid, entry in list(self.groups.items()):
            if now - entry[2] < DOOMED_LOOK_S:
                continue
            entry[2] = now
            state, scheduling = _state(entry[0])
            if state in ("REMOVED", None):
                del self.groups[gid]
                _ready.pop(gid, None)
            elif entry[1] or scheduling == "INFEASIBLE":  # asked again; or no node could take it
                self._remove(gid)

    def _remove(self, gid: Any) -> None:
        entry = self.groups[gid]
        entry[1], entry[2] = True, 0.0  # looked up at the next tick: is it gone?
        remove(entry[0])


def _state(pg: Any) -> tuple[str | None, str | None]:
    """Ray's record of a group: its state and its scheduling state (None, None:
    Ray has no record of it)."""
    from ray.util.placement_group import placement_group_table

    try:
        table = placement_group_table(pg)
    except Exception:  # noqa: BLE001 - asked again at the next look
        return "PENDING", None
    if not table:
        return None, None
    return table.get("state"), (table.get("stats") or {}).get("scheduling_state")
