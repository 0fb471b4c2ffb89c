"""When the cluster fails under a remote subagent: a dead worker node makes
it `lost` (with Ray's reason); the whole cluster gone makes it `lost` once its
deadline passed, and a head that comes back (a new session) makes the others
`lost` at once, saying so; what came home stays replayable. These take the
cluster alone (file order, one xdist group)."""

from __future__ import annotations

import time

import pytest

from tests.conftest import Zap, pgrep, record_of, sleep_marker, trail_records, wait_until
from tests.ray import cluster
from tests.ray.helpers import home_record, poll, remote

pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]'")
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.timeout(240)]


def test_a_dead_node_makes_it_lost(zap: Zap, worker_node) -> None:
    zap = remote(zap, worker_node)
    m = sleep_marker(1304)
    sid = zap.spawn_sh(f"echo started; sleep {m}")
    wait_until(lambda: home_record(zap, sid, "start") and (zap.home / "subagents" / f"{sid}.out").exists(), 60, 0.3)
    assert cluster.kill_worker(worker_node) > 0
    view = wait_until(lambda: (v := poll(zap, sid))["status"] != "running" and v, 30, 0.3)
    assert view["status"] == "lost", view  # type: ignore[index]
    assert "node" in (view.get("reason") or ""), view  # type: ignore[union-attr]
    assert not pgrep(f"sleep {m}")
    assert zap("output", sid).out == "started\n"  # what came home stays
    recs = trail_records(zap.trail(sid))
    assert recs[-1]["type"] == "collected" and recs[-1]["complete"] is False
    assert zap("replay", sid).returncode == 0


def test_the_head_gone_then_restarted(zap: Zap, doomed_cluster) -> None:
    info, shared = doomed_cluster
    zap = remote(zap, info)
    short = zap.spawn_sh(f"echo before; sleep {sleep_marker(1305)}", timeout=6)
    long = zap.spawn_sh(f"echo long; sleep {sleep_marker(1306)}", timeout=600)
    for sid in (short, long):
        wait_until(lambda s=sid: home_record(zap, s, "start") and (zap.home / "subagents" / f"{s}.out").exists(),
                   60, 0.3)
    shared.gone(info)
    t0 = time.monotonic()
    view = poll(zap, short)
    if t0 < record_of(zap, short, "process")["deadline_mono"] + 9:  # type: ignore[index]
        assert view["status"] == "running"  # no answer before its deadline: it may still run out there
    view = wait_until(lambda: (v := poll(zap, short))["status"] != "running" and v, 30, 0.5)
    assert view["status"] == "lost", view  # type: ignore[index]
    assert "did not answer" in view["reason"] and "deadline" in view["reason"], view  # type: ignore[index]
    took = time.monotonic() - t0
    assert poll(zap, long)["status"] == "running"  # its deadline is far: it may still run
    # The head comes back on the same address, a new cluster (another session):
    # the long one's runner is gone with the old one, and it says so at once.
    back = shared.back(info)
    view = poll(zap, long)
    assert view["status"] == "lost" and "restarted" in view["reason"], view
    assert back.dashboard == info.dashboard
    for sid, first in ((short, "before"), (long, "long")):
        assert zap("output", sid).out == f"{first}\n"
        replay = zap("replay", sid)
        assert replay.returncode == 0 and "lost" in replay.out and "start" in replay.out
        assert trail_records(zap.trail(sid))[-1]["type"] == "collected"
    # Final and collected: later commands never try the cluster again.
    t1 = time.monotonic()
    assert zap("poll", "--no-wait", short, long).returncode == 0 and zap("list").returncode == 0
    print(f"lost {took:.1f}s after the cluster went; poll+list afterwards {time.monotonic() - t1:.2f}s")
