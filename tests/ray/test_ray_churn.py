"""Ray under churn (CASES-4 C46, issue 30 item 5), on the real two-node
cluster: subagents killed right after their spawn leave nothing reserved on
the Ray side (placement groups, bundles, demand — checked with Ray's public
state API and `ray status`) and later ones complete; one that waits for Ray
to place it is `queued`, saying so, not `running`; work whose start Ray's
memory monitor killed is never run, and its reason says what Ray did."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import Zap, pgrep, sleep_marker, trail_records, wait_until
from tests.ray import cluster
from tests.ray.conftest import OOM_RESOURCE
from tests.ray.helpers import (
    actors,
    held_bundles,
    kv_has,
    node_of,
    placement_groups,
    poll,
    pool_of,
    ray_status,
    remote,
)

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(400)]

OPEN_PG = ("PENDING", "PREPARED", "CREATED", "RESCHEDULING")


def _no_demand(info: cluster.ClusterInfo) -> str | None:
    """`ray status` once nothing of ours is reserved or asked for; None while it is."""
    said = ray_status(info)
    usage = re.search(r"([\d.]+)/([\d.]+) " + cluster.WORKER_RESOURCE, said)
    if "bundle_group" in said or "(no resource demands)" not in said or not usage or float(usage.group(1)):
        return None
    return said


def test_fast_cancels_leave_no_reservation_and_later_ones_run(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster)  # a quarter of the worker each: four at a time
    m = sleep_marker(1401)

    def spawn_and_kill(_: int) -> tuple[str, int]:
        sid = zap.spawn_sh(f"sleep {m}")
        return sid, zap("kill", "--grace", "1", sid).returncode

    with ThreadPoolExecutor(4) as pool:
        killed = list(pool.map(spawn_and_kill, range(20)))
    assert all(code == 0 for _, code in killed), killed
    fresh = [zap.spawn_sh(f"echo fresh-{i}") for i in range(3)]
    res = zap("wait", *fresh, "--timeout", "120", timeout=150)
    assert res.returncode == 0, (res.out, [poll(zap, s) for s in fresh])
    for i, sid in enumerate(fresh):
        assert zap("output", sid).out == f"fresh-{i}\n"
    for sid, _ in killed:
        assert poll(zap, sid)["status"] == "cancelled"
    sids = [sid for sid, _ in killed] + fresh
    # Nothing is left reserved on the Ray side: no open placement group of any
    # of them, no bundle resource on a node, no demand, nothing of the worker in use.
    assert wait_until(lambda: not {n: s for n, s in placement_groups(shared_cluster, sids).items()
                                   if set(s) & set(OPEN_PG)}, 60, 0.5)
    assert wait_until(lambda: not held_bundles(shared_cluster), 30, 0.5), held_bundles(shared_cluster)
    assert wait_until(lambda: _no_demand(shared_cluster), 60, 1.0), ray_status(shared_cluster)
    assert not pgrep(f"sleep {m}"), "a killed one's command still runs"


def test_one_waiting_for_its_placement_is_queued_saying_so(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster, ray={"resources": {cluster.WORKER_RESOURCE: 4}})  # all of the worker
    go = zap.cwd / "go"
    hog = zap.spawn_sh(f"echo hog; until [ -e {go} ]; do sleep 0.1; done")
    assert wait_until(lambda: placement_groups(shared_cluster, [hog]).get(f"zapcli-{hog}") == ["CREATED"]
                      and poll(zap, hog)["status"] == "running", 90, 0.3)
    waiting = zap.spawn_sh("echo placed")
    try:
        view = wait_until(lambda: (v := poll(zap, waiting))["reason"] and "placement" in v["reason"] and v,
                          60, 0.3)
        assert view["status"] == "queued", view  # type: ignore[index]
        assert re.fullmatch(r"ray: placement pending \d+s", view["reason"]), view  # type: ignore[index]
        human = zap("poll", "--no-wait", waiting).out
        assert re.search(r"queued \(ray: placement pending \d+s\)", human), human
        listed = zap("list").out
        assert re.search(waiting[-8:] + r"\s+queued \(ray: placement pending \d+s\)", listed), listed
        assert poll(zap, hog)["status"] == "running"
    finally:
        go.touch()
    assert zap("wait", hog, waiting, "--timeout", "120", timeout=150).returncode == 0
    assert zap("output", waiting).out == "placed\n"


def test_a_cancel_while_ray_places_it_removes_its_group_only_once_placed(zap: Zap, shared_cluster) -> None:
    """The interleaving of the CI cascade, forced: the kill lands after its
    placement group was made and before Ray placed it (a hog holds all of
    the worker, so Ray is about to place it whenever room frees). Its group
    is not removed while Ray may be preparing it — that can leave its bundle
    reserved for good and stop Ray from placing any later group (Ray issue
    64693) — not even once the caller has all of it home and the pool forgets
    it; once room frees, Ray places it, the pool removes it, nothing stays
    reserved, its task never ran, and later ones run."""
    zap = remote(zap, shared_cluster, ray={"resources": {cluster.WORKER_RESOURCE: 4}})  # all of the worker
    go, ran = zap.cwd / "go", zap.cwd / "ran"
    hog = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done")
    assert wait_until(lambda: placement_groups(shared_cluster, [hog]).get(f"zapcli-{hog}") == ["CREATED"], 90, 0.3)
    doomed = zap.spawn_sh(f"echo ran > {ran}")
    try:
        assert wait_until(lambda: placement_groups(shared_cluster, [doomed]).get(f"zapcli-{doomed}") == ["PENDING"]
                          and poll(zap, doomed)["status"] == "queued", 60, 0.3)
        assert zap("kill", "--grace", "1", doomed).returncode == 0
        assert poll(zap, doomed)["status"] == "cancelled"
        # All of it comes home (so the pool is told to forget it), and longer than a
        # pool tick: its group is still there, pending, not removed under Ray's feet.
        sub_key = f"zapcli_{pool_of(zap)['key']}_sub_{doomed}.json"
        assert wait_until(lambda: poll(zap, doomed) and not kv_has(shared_cluster, sub_key), 30, 0.3)
        time.sleep(5)  # pool ticks: the old code removed it within 2 s, pending or not
        assert placement_groups(shared_cluster, [doomed]).get(f"zapcli-{doomed}") == ["PENDING"]
    finally:
        go.touch()
    assert zap("wait", hog, "--timeout", "120", timeout=150).returncode == 0
    assert wait_until(lambda: placement_groups(shared_cluster, [hog, doomed]) in (
        {}, {f"zapcli-{hog}": ["REMOVED"], f"zapcli-{doomed}": ["REMOVED"]}), 60, 0.5), \
        placement_groups(shared_cluster, [hog, doomed])
    assert wait_until(lambda: not held_bundles(shared_cluster), 30, 0.5), held_bundles(shared_cluster)
    later = zap.spawn_sh("echo later")
    assert zap("wait", later, "--timeout", "120", timeout=150).returncode == 0
    assert zap("output", later).out == "later\n"
    assert poll(zap, doomed)["status"] == "cancelled"
    assert not ran.exists(), "the cancelled one's task ran"


def _node_trail_types(home: str, sid: str) -> list[str]:
    path = Path(home) / "subagents" / f"{sid}.jsonl"
    return [r["type"] for r in trail_records(path)] if path.exists() else []


def test_a_start_the_memory_monitor_killed_is_never_run_and_says_so(zap: Zap, oom_node) -> None:
    """A node whose Ray memory monitor kills every Ray worker (as one out of
    memory does): zapcli's agent there dies before it can start the runner.
    The subagent fails, the reason naming what Ray did; its task never runs,
    then or later; Ray restarted nothing (its public state API: every agent
    actor there is dead with no restart) and nothing of it stays reserved."""
    info, home = oom_node
    zap = remote(zap, info, ray={"resources": {OOM_RESOURCE: 1}})
    # Ray's monitor looks every 100 ms: an agent that starts its runner before
    # the next look has done nothing wrong (that subagent runs and completes).
    # The case under test is the kill that comes first; it is tried again, with
    # a task of its own, until it happens (almost always the first time).
    for attempt in range(5):
        marker = zap.cwd / f"ran-{attempt}"
        # its deadline as long as the wait: under a full suite's load Ray's answer
        # about the dead agent came after a 60 s deadline (it said `timeout`)
        sid = zap.spawn_sh(f"echo ran >> {marker}", timeout=150)
        view = wait_until(lambda sid=sid: (v := poll(zap, sid))["status"] not in ("queued", "running")
                          and v, 150, 0.5)
        if view["status"] != "completed":  # type: ignore[index]
            break
    assert view["status"] == "failed", view  # type: ignore[index]
    reason = view["reason"]  # type: ignore[index]
    assert reason.startswith("Ray's memory monitor killed zapcli's agent on Ray node "), reason
    assert re.search(r"memory there [\d.]+\s*GB used of [\d.]+\s*GB, over its kill threshold of 1\.0%", reason), reason
    assert "its runner never started, and zapcli does not start it again" in reason, reason
    time.sleep(5)  # later looks start nothing either
    assert poll(zap, sid)["status"] == "failed"
    assert not marker.exists(), "its task ran"
    assert "start" not in _node_trail_types(home, sid)
    everyone = actors(info, "NodeAgent")
    agents = [a for a in everyone if a.get("name") == f"agent-{node_of(info, OOM_RESOURCE)[:16]}"]
    assert agents, everyone
    assert all(a["state"] == "DEAD" and int(a.get("num_restarts") or 0) == 0
               and "oom_context" in (a.get("death_cause") or {}) for a in agents), agents
    assert wait_until(lambda: placement_groups(info, [sid]).get(f"zapcli-{sid}", ["REMOVED"]) == ["REMOVED"], 30, 0.5)
