"""The caller's pool on a real two-node cluster (docs/explanation/rules.md#remote-execution, docs/explanation/rules.md#fleets-traces-teams): many
subagents share one pool job and each runs once, as its own process; a
submit whose answer was lost (a delaying or dropping proxy in front of the
dashboard) is looked up and never `failed` nor run twice; a dead pool is
replaced without losing or repeating anything; an idle pool ends by itself;
collection fetches only what is new; another zapcli version, or a Python on
the cluster without zapcli, is one line at spawn and named by doctor; a
subagent on a node of the caller's own machine keeps its files in the
caller's state folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, Zap, record_of, trail_records, wait_until
from tests.ray import cluster
from tests.ray.helpers import (
    kv_has,
    node_file,
    node_runs,
    placement_group,
    poll,
    pool_files,
    pool_jobs,
    pool_of,
    remote,
    subagent_jobs,
)
from tests.ray.proxy import Proxy

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(300)]


def _runs(marker: Path) -> list[str]:
    return sorted(marker.read_text().split()) if marker.exists() else []


def test_a_fleet_shares_one_pool_and_each_runs_once(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster, max_concurrent=8, ray={"resources": {cluster.WORKER_RESOURCE: 0.5}})
    marker = zap.cwd / "runs"
    sids = [zap.spawn_sh(f"echo {i} >> {marker}; sleep 1; echo done-{i}") for i in range(8)]
    assert zap("wait", *sids, "--timeout", "120").returncode == 0
    assert _runs(marker) == [str(i) for i in range(8)]
    pool = pool_of(zap)
    assert list(pool_jobs(shared_cluster, pool["key"])) == [pool["job"]] and not subagent_jobs(shared_cluster)
    assert pool["hello"]["private_api"] == [], "the private key-value API no longer behaves as the pool needs"
    pids = set()
    for i, sid in enumerate(sids):
        assert zap("output", sid).out == f"done-{i}\n"
        runs = node_runs(node_file(shared_cluster, sid))
        assert len(runs) == 1, runs  # its own runner, its own trail, on the worker node
        pids.add(runs[0]["pid"])
    assert len(pids) == len(sids)
    # Everything home: nothing of them is left on the Ray side.
    for sid in sids:
        wait_until(lambda s=sid: record_of(zap, s, "collected") or poll(zap, s) and False, 30, 0.3)
    assert wait_until(lambda: [f for f in pool_files(shared_cluster, pool) if ".frames" in f] == [], 20, 0.3)
    for sid in sids:
        assert placement_group(shared_cluster, sid) in (None, "REMOVED")
        assert not kv_has(shared_cluster, f"zapcli_{pool['key']}_sub_{sid}.json")
    assert not list((zap.home / "ray" / pool["key"] / "cursor").iterdir())


def test_a_submit_whose_answer_was_lost_is_looked_up_not_failed(zap: Zap, shared_cluster) -> None:
    """The first submission's answer comes after the caller gave up (it
    landed); the second one's connection drops before it reaches the
    dashboard (it did not). Both run exactly once; neither is ever failed.

    The second is dropped twice: a connection kept from the spawn's earlier
    requests that closes under a request is taken for one the dashboard
    closed while idle, and the (idempotent) PUT is sent once more on a new
    connection; only a drop on that one leaves the answer lost."""
    from zapcli.executors.ray_pool import SUBMIT_TIMEOUT_S

    seen: list[str] = []

    def rule(method: str, path: str) -> tuple[str, float] | None:
        if method == "PUT" and "_sub_" in path:
            seen.append(path)
            tries = seen.count(path)
            if path == seen[0]:
                return ("delay", SUBMIT_TIMEOUT_S + 2.0) if tries == 1 else None
            return ("drop-before", 0.0) if tries <= 2 else None
        return None

    proxy = Proxy(shared_cluster.dashboard, rule)
    try:
        zap = remote(zap, shared_cluster)
        zap.env["RAY_ADDRESS"] = proxy.url
        marker_a, marker_b = zap.cwd / "runs-a", zap.cwd / "runs-b"
        a = zap.spawn_sh(f"echo a >> {marker_a}; sleep 2")
        b = zap.spawn_sh(f"echo b >> {marker_b}; sleep 2")
        for sid in (a, b):
            said = [r["message"] for r in trail_records(zap.trail(sid)) if r.get("name") == "submit"]
            assert said and "answer was lost" in said[0], said
        view = poll(zap, b)  # not in the cluster: looked up, submitted again, still running
        assert view["status"] == "running" and "not confirmed yet" in view["reason"], view
        statuses = set()
        for sid in (a, b):
            wait_until(lambda s=sid: statuses.add(v := poll(zap, s)["status"]) or v == "completed", 90, 0.3)
        assert statuses <= {"running", "completed"}, statuses
        assert _runs(marker_a) == ["a"] and _runs(marker_b) == ["b"]
        assert len(node_runs(node_file(shared_cluster, a))) == 1
        assert len(node_runs(node_file(shared_cluster, b))) == 1
    finally:
        proxy.close()


def _pool_driver_pid(info: cluster.ClusterInfo, job: str) -> int:
    details = cluster._get_json(f"{info.dashboard}/api/jobs/{job}", timeout=10)
    return int(details["driver_info"]["pid"])  # type: ignore[index]


def test_a_dead_pool_is_replaced_without_losing_or_repeating(zap: Zap, shared_cluster) -> None:
    """Six subagents, four at a time on the worker: the pool's driver is
    killed while some run and some wait for a place. A new pool takes over:
    the running ones are adopted, the waiting ones started, each once."""
    zap = remote(zap, shared_cluster)
    marker = zap.cwd / "runs"
    go = zap.cwd / "go"
    sids = [zap.spawn_sh(f"echo {i} >> {marker}; until [ -e {go} ]; do sleep 0.1; done; echo done-{i}")
            for i in range(6)]
    assert wait_until(lambda: len(_runs(marker)) == 4, 90, 0.2)
    pool = pool_of(zap)
    os.kill(_pool_driver_pid(shared_cluster, pool["job"]), signal.SIGKILL)
    assert wait_until(lambda: pool_jobs(shared_cluster, pool["key"]).get(pool["job"]) == "FAILED", 60, 0.3)
    views = [poll(zap, sid) for sid in sids]  # observers notice and start a new pool
    # Nothing is lost: each runs, or (once the new pool has said where it is) waits for its place.
    assert all(v["status"] == "running" or (v["status"] == "queued" and "placement" in (v["reason"] or ""))
               for v in views), views
    go.touch()
    assert zap("wait", *sids, "--timeout", "180").returncode == 0
    assert _runs(marker) == [str(i) for i in range(6)]
    for i, sid in enumerate(sids):
        assert len(node_runs(node_file(shared_cluster, sid))) == 1
        assert zap("output", sid).out == f"done-{i}\n"
    now = pool_of(zap)
    assert now["gen"] == pool["gen"] + 1
    assert list(pool_jobs(shared_cluster, pool["key"])) == [now["job"]], "the dead pool's job was deleted"


def test_an_idle_pool_ends_by_itself_and_a_new_one_starts_on_demand(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster, ray={"pool_idle_s": 2})
    first = zap.spawn_sh("echo one")
    assert zap("wait", first, "--timeout", "90").returncode == 0
    pool = pool_of(zap)
    assert wait_until(lambda: pool_jobs(shared_cluster, pool["key"]).get(pool["job"]) == "SUCCEEDED", 60, 0.5)
    second = zap.spawn_sh("echo two")
    assert zap("wait", second, "--timeout", "90").returncode == 0
    assert zap("output", second).out == "two\n"
    assert list(pool_jobs(shared_cluster, pool["key"])) == [pool_of(zap)["job"]] != [pool["job"]]


def test_collection_fetches_only_what_is_new(zap: Zap, shared_cluster) -> None:
    """Polled 10 times at least, while it writes 60 KB and after: the frames fetched
    add up to about what it wrote (once), not to the whole output again at every poll."""
    proxy = Proxy(shared_cluster.dashboard)
    try:
        zap = remote(zap, shared_cluster)
        zap.env["RAY_ADDRESS"] = proxy.url
        go = zap.cwd / "go"
        sid = zap.spawn_sh('for i in $(seq 40); do head -c 1500 /dev/zero | tr "\\0" x; echo " $i"; '
                           f'sleep 0.1; done; until [ -e {go} ]; do sleep 0.1; done')
        out = zap.home / "subagents" / f"{sid}.out"
        polls = 0

        def done() -> bool:
            nonlocal polls
            polls += 1
            poll(zap, sid)
            # 10 polls at least, however slowly each runs on a loaded machine
            return polls >= 10 and out.exists() and out.read_bytes().endswith(b" 40\n")

        assert wait_until(done, 90, 0.2)
        go.touch()
        assert zap("wait", sid, "--timeout", "60").returncode == 0
        wait_until(lambda: record_of(zap, sid, "collected") or poll(zap, sid) and False, 30, 0.3)
        size = out.stat().st_size
        fetched = proxy.bytes_for(f"{sid}.frames")
        assert size == 40 * 1500 + sum(len(f" {i}\n") for i in range(1, 41))
        # once = the output and its frames' records (~2x); fetching the whole output
        # again at each of the 10+ polls would be over 5x
        assert polls >= 10 and fetched < 3 * size + 20_000, (polls, fetched, size)
        print(f"{polls} polls; frames fetched {fetched} bytes for {size} bytes of output")
    finally:
        proxy.close()


def test_another_zapcli_version_on_the_cluster_is_one_line(zap: Zap, shared_cluster, tmp_path: Path) -> None:
    from zapcli import __version__

    other = tmp_path / "other"
    shutil.copytree(REPO / "zapcli", other / "zapcli", ignore=shutil.ignore_patterns("__pycache__"))
    init = other / "zapcli" / "__init__.py"
    init.write_text(init.read_text().replace(f'__version__ = "{__version__}"', '__version__ = "0.0.1-other"'))
    zap = remote(zap, shared_cluster)
    zap.env["PYTHONPATH"] = str(other)
    res = zap("spawn", "--cli", "sh", "--", "echo hi")
    assert res.returncode == 1 and res.err.count("\n") == 1, res.err
    assert f"zapcli {__version__} (trail format 1) is installed on the Ray cluster" in res.err, res.err
    assert "zapcli 0.0.1-other (trail format 1) here" in res.err, res.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").iterdir())
    line = next(ln for ln in zap("doctor").out.splitlines() if "0.0.1-other" in ln)
    assert f"zapcli {__version__}" in line


def test_a_python_without_zapcli_on_the_cluster_says_what_to_set(zap: Zap, shared_cluster, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    zap = remote(zap, shared_cluster, ray={"python": str(bare / "bin" / "python")})
    res = zap("spawn", "--cli", "sh", "--", "echo hi")
    assert res.returncode == 1 and res.err.count("\n") == 1, res.err
    assert f"ray.python ({bare / 'bin' / 'python'}) cannot import zapcli and ray" in res.err, res.err
    assert "No module named" in res.err and "set ray.python in config.yaml" in res.err, res.err
    doctor = zap("doctor")
    assert doctor.returncode == 1 and "set ray.python in config.yaml" in doctor.out, doctor.out


def test_on_the_callers_own_machine_a_node_keeps_its_files_in_the_callers_folder(
        zap: Zap, shared_cluster) -> None:
    """The head has no ZAPCLI_HOME of its own (a local cluster started by
    hand): what runs there stays inside the caller's state folder, apart
    from its own subagents — not in the platform default of the node."""
    zap = remote(zap, shared_cluster, ray={"resources": {"node:__internal_head__": 0.01}})
    sid = zap.spawn_sh("echo where")
    assert zap("wait", sid, "--timeout", "90").returncode == 0
    assert zap("output", sid).out == "where\n"
    node_trail = zap.home / "ray-node" / "subagents" / f"{sid}.jsonl"
    assert node_trail.exists() and len(node_runs(node_trail)) == 1
    assert not (Path(shared_cluster.head_home) / ".local" / "state" / "zapcli").exists()
    assert json.loads(zap.trail(sid).read_text().splitlines()[0])["type"] == "spawn"
