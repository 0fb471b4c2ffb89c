"""The Ray executor end to end on a real two-node cluster (tests/ray/conftest.py):
placed on the worker node, its records and output come home while it runs and
in full at the end, from the worker's own state folder, and then nothing of it
is left on the Ray side; kill ends its tree on the node and its placement at
once; the deadline holds with nobody polling; the queue, --after and the caps
count remote subagents; doctor checks the cluster and the pool's zapcli. The
pool's own tests are in test_ray_pool.py; the node-killing and
cluster-stopping ones in test_ray_failures.py (they run after these)."""

from __future__ import annotations

import time

import pytest

from tests.conftest import Zap, pgrep, record_of, sleep_marker, trail_records, wait_until
from tests.ray import cluster
from tests.ray.helpers import (
    home_record,
    kv_has,
    node_file,
    placement_group,
    poll,
    pool_files,
    pool_of,
    remote,
)

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(240)]


def test_runs_on_the_worker_node_and_comes_home_while_running(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster)
    go = zap.cwd / "go"  # the node is this machine: the task ends once the test has looked
    task = ('echo "home=$ZAPCLI_HOME"; for i in $(seq 10); do echo "tick $i"; echo "e$i" >&2; sleep 0.4; done; '
            f'until [ -e {go} ]; do sleep 0.1; done')
    sid = zap.spawn_sh(task)
    process = record_of(zap, sid, "process")
    assert process and process["executor"] == "ray" and "pid" not in process
    pool = pool_of(zap)
    assert process["pool"] == pool["key"]
    out = zap.home / "subagents" / f"{sid}.out"
    # While it runs, an observer brings each new line home.
    assert wait_until(lambda: poll(zap, sid)["status"] == "running" and out.exists()
                      and b"tick 2" in out.read_bytes(), 60, 0.2)
    listed = zap.json("list")["subagents"]
    assert [v["status"] for v in listed if v["id"] == sid] == ["running"]
    go.touch()
    assert zap("wait", sid, "--timeout", "60").returncode == 0
    view = poll(zap, sid)
    assert view["status"] == "completed" and view["exit_code"] == 0
    # In full at the end; the node kept its files in ITS state folder.
    want = f"home={shared_cluster.worker_home}\n" + "".join(f"tick {i}\n" for i in range(1, 11))
    assert zap("output", sid).out == want
    assert zap("output", "--stderr", sid).out == "".join(f"e{i}\n" for i in range(1, 11))
    assert node_file(shared_cluster, sid).exists() and node_file(shared_cluster, sid, ".out").read_text() == want
    assert not (zap.home / "work").exists()
    wait_until(lambda: home_record(zap, sid, "collected"), 20, 0.3)
    recs = trail_records(zap.trail(sid))
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(set(seqs)), "one seq per record, increasing"
    types = [r["type"] for r in recs]
    assert types[:2] == ["spawn", "process"] and types.count("start") == 1 and types[-1] == "collected"
    status = [r for r in recs if r["type"] == "status"]
    assert len(status) == 1 and status[0]["node_seq"] > 0 and "mono" not in status[0]
    assert recs[-1]["complete"] is True
    # Nothing more to fetch: polling again adds nothing (and does not ask the cluster).
    poll(zap, sid)
    assert trail_records(zap.trail(sid)) == recs
    replay = zap("replay", sid)
    assert replay.returncode == 0 and f"ray pool {pool['key']}" in replay.out and "completed" in replay.out
    # All of it home: the pool forgets it (its key, its placement, its frames file).
    assert wait_until(lambda: not pool_files(shared_cluster, pool) or
                      all(sid not in f for f in pool_files(shared_cluster, pool)), 20, 0.3)
    assert not kv_has(shared_cluster, f"zapcli_{pool['key']}_sub_{sid}.json")
    assert placement_group(shared_cluster, sid) in (None, "REMOVED")


def test_kill_ends_its_tree_on_the_node_within_the_grace(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster)
    a, b = sleep_marker(1301), sleep_marker(1302)
    sid = zap.spawn_sh(f"setsid sleep {a} & sleep {b}; wait")
    wait_until(lambda: pgrep(f"sleep {a}") and pgrep(f"sleep {b}"), 40, 0.2)
    t0 = time.monotonic()
    res = zap("kill", "--grace", "1", sid)
    took = time.monotonic() - t0
    assert res.returncode == 0, res.err
    assert "cancelled (its runner ended on its Ray node" in res.out, res.out
    assert not pgrep(f"sleep {a}") and not pgrep(f"sleep {b}"), "its tree (a setsid'd child too) is gone"
    assert took < 1 + 2 + 5, took  # the grace, the node's last frames, the job's end
    view = poll(zap, sid)
    assert view["status"] == "cancelled" and view["reason"] == "killed by the user"
    # The node got the cancel with the caller's grace: its own trail says cancelled too.
    node = [r for r in trail_records(node_file(shared_cluster, sid)) if r["type"] == "status"]
    assert node[0]["status"] == "cancelled" and node[0]["grace_s"] == 1 and node[0]["from_caller"]
    assert placement_group(shared_cluster, sid) == "REMOVED", "stopped on the Ray side too"
    assert wait_until(lambda: home_record(zap, sid, "collected"), 15, 0.3)


def test_the_deadline_holds_on_the_node_with_nobody_polling(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster)
    m = sleep_marker(1303)
    sid = zap.spawn_sh(f"echo begun; sleep {m}", timeout=3)
    node = node_file(shared_cluster, sid)
    # Nobody polls: the node's runner ends it at its deadline by itself.
    final = wait_until(lambda: next((r for r in trail_records(node) if r["type"] == "status"), None)
                       if node.exists() else None, 40, 0.2)
    assert final["status"] == "timeout", final  # type: ignore[index]
    assert wait_until(lambda: not pgrep(f"sleep {m}"), 10, 0.2)
    view = wait_until(lambda: (v := poll(zap, sid))["status"] != "running" and v, 20, 0.3)
    assert view["status"] == "timeout", view  # type: ignore[index]
    assert zap("output", sid).out == "begun\n"


def test_queue_after_and_caps_count_remote_subagents(zap: Zap, shared_cluster) -> None:
    """max_concurrent 1 counts the remote one: the local one waits for it; a
    remote one --after a local one starts only after it completed."""
    zap = remote(zap, shared_cluster, max_concurrent=1)
    go = zap.cwd / "go"  # the remote one runs until the test has looked (a fixed sleep ran out under load)
    first = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done; echo remote-first")
    second = zap("spawn", "--executor", "local", "--cli", "sh", "--", "echo local-second")
    assert second.returncode == 0, second.err
    local = second.out.strip()
    try:
        assert poll(zap, local)["status"] == "queued"
        third = zap.spawn_sh("echo remote-third", "--after", local)
        assert poll(zap, third)["status"] == "queued"
    finally:
        go.touch()
    assert zap("wait", first, local, third, "--timeout", "90").returncode == 0
    ends = {sid: trail_records(zap.trail(sid)) for sid in (first, local, third)}

    def when(sid: str, rtype: str) -> str:
        return next(r["ts"] for r in ends[sid] if r["type"] == rtype)

    assert when(local, "process") >= when(first, "status")
    assert when(third, "process") >= when(local, "status")
    assert zap("output", third).out == "remote-third\n"


def test_a_spawn_that_finds_the_cap_full_leaves_a_running_ones_progress_out_there(
        zap: Zap, shared_cluster) -> None:
    """The queue asks only which remote subagents ended (only an end frees a
    slot): a spawn that finds the cap full fetches none of a running one's
    records (a round trip to the cluster each, in every queued spawn); the
    next look at it does."""
    zap = remote(zap, shared_cluster, max_concurrent=1)
    go = zap.cwd / "go"
    first = zap.spawn_sh(f"echo begun; until [ -e {go} ]; do sleep 0.1; done")
    try:
        out = node_file(shared_cluster, first, ".out")
        assert wait_until(lambda: out.exists() and b"begun" in out.read_bytes(), 60, 0.2)
        time.sleep(1.5)  # shipped by the pool meanwhile
        before = zap.trail(first).read_bytes()
        second = zap.spawn_sh("echo second")
        assert poll(zap, second)["status"] == "queued"
        assert zap.trail(first).read_bytes() == before  # neither the spawn nor that look fetched it
        assert poll(zap, first)["status"] == "running"
        assert zap.trail(first).read_bytes() != before  # a look at it brings it home
    finally:
        go.touch()
    assert zap("wait", first, second, "--timeout", "90").returncode == 0
    assert zap("output", first).out == "begun\n"


def test_the_cluster_can_have_a_cap_of_its_own(zap: Zap, shared_cluster) -> None:
    """ray.max_concurrent: remote subagents count against it, local ones do not."""
    zap = remote(zap, shared_cluster, max_concurrent=1, ray={"max_concurrent": 1})
    a = zap.spawn_sh(f"sleep {sleep_marker(2)}")
    b = zap.spawn_sh("echo second")
    local = zap("spawn", "--executor", "local", "--cli", "sh", "--", "echo local")
    assert local.returncode == 0
    assert poll(zap, b)["status"] == "queued"
    assert zap("wait", local.out.strip(), "--timeout", "20").returncode == 0  # its own pool: not blocked
    assert zap("kill", a).returncode == 0
    assert zap("wait", b, "--timeout", "60").returncode == 0


def test_doctor_checks_the_configured_cluster(zap: Zap, shared_cluster) -> None:
    zap = remote(zap, shared_cluster)
    from zapcli import __version__

    res = zap("doctor")
    line = next(ln for ln in res.out.splitlines() if "ray cluster" in ln)
    assert "Ray 2.60" in line and shared_cluster.dashboard in line and "2 node(s) alive" in line, res.out
    assert f"zapcli {__version__} on the cluster" in line and f"{__version__} here" in line, res.out
    assert "Ray API" not in res.out, res.out  # the private key-value API behaves as the pool needs
    res = zap("doctor", env={"RAY_ADDRESS": "http://127.0.0.1:9"})
    line = next(ln for ln in res.out.splitlines() if "ray cluster" in ln)
    assert res.returncode == 1 and "cannot reach the Ray cluster at http://127.0.0.1:9" in line, res.out


def test_the_worker_node_is_where_the_job_ran(shared_cluster) -> None:
    """A sanity check of the fixture itself: two nodes, the worker with its resource."""
    nodes = cluster._alive_nodes(shared_cluster.dashboard)
    assert len(nodes) == 2
    assert sum(cluster.WORKER_RESOURCE in n.get("resources_total", {}) for n in nodes) == 1
