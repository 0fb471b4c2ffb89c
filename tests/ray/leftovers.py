"""What a Ray test left reserved on the shared cluster, checked after each
test that shares it: a leak fails THAT test (its teardown, loudly, naming
what was left) and is cleaned up, so the tests after it start on a clean
cluster instead of waiting for room that never comes.

Imports `tests.ray.cluster` (Ray's public state API over the dashboard),
`tests.ray.helpers`; `ray` only in a subprocess (a driver that removes the
leftover groups by id). Nothing here stops Ray processes itself: a
cluster that stays dirty is handed back to the fixtures, which stop it by
pid (never `ray stop`).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

from tests.ray import cluster
from tests.ray.helpers import held_bundles, ray_status

OPEN_PG = ("PENDING", "PREPARED", "CREATED", "RESCHEDULING")
SETTLE_S = 60.0  # the pools remove an ended one's group at their next tick; a cancelled
# one's group pending placement waits until Ray placed it (room frees once the test's ones end)


def open_groups(info: cluster.ClusterInfo) -> dict[str, dict]:
    """Ray's public state API: zapcli's placement groups not removed yet,
    by id (name, state, scheduling state)."""
    found = cluster._get_json(f"{info.dashboard}/api/v0/placement_groups?limit=10000&detail=true",
                              timeout=30)["data"]["result"]["result"]  # type: ignore[index]
    return {g["placement_group_id"]: {"name": g.get("name"), "state": g.get("state"),
                                      "scheduling": (g.get("stats") or {}).get("scheduling_state")}
            for g in found if str(g.get("name") or "").startswith("zapcli-") and g.get("state") in OPEN_PG}


def worker_in_use(info: cluster.ClusterInfo) -> float:
    """How much of the worker node's custom resource `ray status` (the
    public command line) says is taken: 0 when none is reserved or used."""
    got = re.search(r"([\d.]+)/([\d.]+) " + cluster.WORKER_RESOURCE, ray_status(info))
    return float(got.group(1)) if got else 0.0


def _settle(cond, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while True:
        try:
            if cond():
                return True
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if time.monotonic() > end:
            return False
        time.sleep(0.5)


def end_subagents(zap) -> None:  # type: ignore[no-untyped-def]
    """Kill what the test left running or queued (as its user would): its
    groups can go then."""
    if (Path(zap.home) / "subagents").is_dir():
        try:
            zap("kill", "--all", "--grace", "1", timeout=120)
        except subprocess.TimeoutExpired:
            pass  # what it left open is reported below


def remove_groups(info: cluster.ClusterInfo, ids: list[str]) -> str:
    """Remove placement groups by id through a Ray driver; what it said."""
    script = ("import sys, ray\n"
              "from ray._raylet import PlacementGroupID\n"
              "from ray.util.placement_group import PlacementGroup, remove_placement_group\n"
              "ray.init(address=sys.argv[1], log_to_driver=False)\n"
              "for h in sys.argv[2:]:\n"
              "    remove_placement_group(PlacementGroup(PlacementGroupID(bytes.fromhex(h))))\n")
    res = subprocess.run([str(cluster.RAY_BIN.parent / "python"), "-c", script, info.gcs_address, *ids],
                         capture_output=True, text=True, timeout=120)
    return (res.stdout + res.stderr).strip()[-2000:]


def check(info: cluster.ClusterInfo, before: set[str], zap) -> str | None:  # type: ignore[no-untyped-def]
    """After a test: None when it left nothing reserved; else what it left
    (after removing it). Raises `Dirty` when the cluster could not be made
    clean (bundles held with no group, or groups that do not go)."""
    if zap is not None:
        end_subagents(zap)
    mine = lambda: {i: g for i, g in open_groups(info).items() if i not in before}  # noqa: E731
    if _settle(lambda: not mine(), SETTLE_S) and _settle(lambda: not held_bundles(info), 30):
        return None
    left = mine()
    bundles = held_bundles(info)
    said = f"placement groups left open: {json.dumps(left)}; bundle resources held: {bundles}"
    if left:
        said += f"\nremoved them: {remove_groups(info, sorted(left)) or 'ok'}"
    if not (_settle(lambda: not mine(), 30) and _settle(lambda: not held_bundles(info), 30)
            and _settle(lambda: worker_in_use(info) == 0, 30)):
        raise Dirty(said + "\nthe cluster is still not clean: it is restarted for the next tests")
    return said


class Dirty(Exception):
    """The cluster kept a reservation nothing can free: it must be restarted."""
