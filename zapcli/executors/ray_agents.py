"""The pool's agents, one per Ray node, and what Ray did to them: each is
`ray_node.NodeAgent` made a Ray actor placed on its node, never restarted
or retried by Ray; when Ray's memory monitor kills one, the node gets no
new one for a pause, and the words for what Ray did are made here.

Imports `ray` (this runs inside the pool's Ray job) and `ray_node`. The
pool (`ray_dispatch`) decides what a death means for its subagents.
"""

from __future__ import annotations

import re
import time
from typing import Any

# Ray must never run any of this again by itself (a retried `start` would be a second
# runner): no actor restarts, no task retries (OOM kills included), so no lineage
# reconstruction of what an agent returned either
NO_RETRIES = {"max_restarts": 0, "max_task_retries": 0}
# Ray's memory monitor killed a node's agent: the next one is made after a pause
# (1, 2, 4 ... 30 s); a start it killed this many times in a row is given up
OOM_PAUSE_S, OOM_PAUSE_MAX_S, OOM_GIVE_UP = 1.0, 30.0, 3
NOT_AGAIN = ("its runner never started, and zapcli does not start it again (spawn it again once that "
             "node has memory to spare)")


class Agents:
    """The agent of each node (made on first use), and the nodes whose agent
    Ray's memory monitor killed: (kills in a row, paused until, what Ray did)."""

    def __init__(self, caller: dict[str, Any]):
        self.caller = caller
        self.handles: dict[str, Any] = {}
        self.oom: dict[str, tuple[int, float, str]] = {}

    def get(self, node: str) -> Any:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from zapcli.executors.ray_node import NodeAgent

        if node not in self.handles:
            self.handles[node] = ray.remote(NodeAgent).options(
                name=f"agent-{node[:16]}", get_if_exists=True, num_cpus=0, max_concurrency=16,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False), **NO_RETRIES,
            ).remote(self.caller)
        return self.handles[node]

    def drop(self, node: str) -> bool:
        """Forget `node`'s agent (a call to it failed); False when it was forgotten already."""
        return self.handles.pop(node, None) is not None

    def paused(self, node: str) -> bool:
        """Ray's memory monitor killed this node's agent a moment ago: no new one yet."""
        return node in self.oom and time.monotonic() < self.oom[node][1]

    def memory_killed(self, node: str, why: str, again: bool) -> tuple[int, float]:
        """Count a kill of `node`'s agent (`again`: one already counted, seen
        through another call in flight to it); (kills in a row, the pause)."""
        if again and node in self.oom:
            kills, until, _ = self.oom[node]
            return kills, max(until - time.monotonic(), 0.0)
        kills = self.oom.get(node, (0, 0.0, ""))[0] + 1
        pause = min(OOM_PAUSE_S * 2 ** (kills - 1), OOM_PAUSE_MAX_S)
        self.oom[node] = (kills, time.monotonic() + pause, why)
        return kills, pause

    def answered(self, node: str) -> None:
        """An agent answered from `node`: it runs there again."""
        self.oom.pop(node, None)


def node_info(node: str) -> dict[str, Any] | None:
    """Ray's word on a node (`ray.nodes()`): Alive, DeathReasonMessage...; None: unknown."""
    import ray

    return next((n for n in ray.nodes() if n.get("NodeID") == node), None)


def oom_words(exc: BaseException, node: str) -> str | None:
    """What Ray did, when `exc` says its memory monitor killed the worker
    (Ray's public OutOfMemoryError, or a dead actor's error carrying it):
    "Ray's memory monitor killed zapcli's agent on Ray node 59a63e1f861b at
    192.0.2.2 (memory there 2.46GB used of 23.54GB, over its kill threshold
    of 95.0%)"; else None."""
    from ray.exceptions import OutOfMemoryError

    text = str(exc)
    if not isinstance(exc, OutOfMemoryError) and "running low on memory" not in text:
        return None
    where = re.search(r"Memory on the node \(IP: ([^,)]+)[^)]*\) was ([\d.]+\s*\w+) used / ([\d.]+\s*\w+)", text)
    limit = re.search(r"threshold of \d+B \(([\d.]+%)", text)
    place = f"Ray node {node[:12]}" + (f" at {where.group(1)}" if where else "")
    said = [f"memory there {where.group(2)} used of {where.group(3)}"] if where else []
    if limit:
        said.append(f"over its kill threshold of {limit.group(1)}")
    return f"Ray's memory monitor killed zapcli's agent on {place}" + (f" ({', '.join(said)})" if said else "")
