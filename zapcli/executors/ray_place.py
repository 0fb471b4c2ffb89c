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


def node_of(pg: Any) -> str:
    """The node Ray placed a ready group on."""
    from ray.util.placement_group import placement_group_table

    return str(placement_group_table(pg)["bundles_to_node_id"][0])


def remove(pg: Any) -> None:
    from ray.util.placement_group import remove_placement_group

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
