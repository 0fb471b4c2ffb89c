"""The cluster fixtures: one real two-node Ray cluster per test run.

Imports `tests.ray.cluster`, `tests.ray.leftovers`, `zapcli.locks`. The tests skip, saying why, when Ray
is not installed (`pip install -e '.[dev,ray]'`, which `make test` does).

Under pytest-xdist the workers SHARE one cluster instead of each starting
its own (the machine has 2 cores; a cluster costs ~1 GB and 10-20 s): a file
lock next to xdist's shared temp folder guards a small state file with the
cluster's info and the pids of the workers using it; the first one starts it,
the last one to leave stops it (by pid, see `cluster.stop`). The tests are
marked `xdist_group("ray")` and `make test` runs `--dist loadgroup`, so they
all run on one worker, in file order. Within a run each test holds the
cluster shared (`shared_cluster`) or alone (`worker_node`, `doomed_cluster`:
they kill the worker node or the whole cluster); a cluster that was stopped
is started again by the next test that needs one.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.ray import cluster, leftovers
from zapcli.locks import exclusive


def _alive(info: cluster.ClusterInfo) -> bool:
    """The head's `ray start --block` still runs (a busy dashboard may answer
    slowly on 2 shared cores: its HTTP answer is no reason to restart)."""
    import psutil

    try:
        return psutil.Process(info.head_pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Shared:
    """The state file (cluster info + users) under a file lock."""

    def __init__(self, folder: Path):
        self.state = folder / "ray-cluster.json"
        self.lock_file = folder / "ray-cluster.lock"
        self.use_lock = folder / "ray-cluster.use"

    def _read(self) -> dict:
        return json.loads(self.state.read_text()) if self.state.exists() else {"info": None, "users": []}

    def join(self) -> None:
        with exclusive(self.lock_file, cluster.START_TIMEOUT_S * 2):
            data = self._read()
            data["users"] = sorted(set(data["users"]) | {os.getpid()})
            self.state.write_text(json.dumps(data))

    def ensure(self) -> cluster.ClusterInfo:
        """The cluster's info; started first when there is none or it is gone."""
        with exclusive(self.lock_file, cluster.START_TIMEOUT_S * 2):
            data = self._read()
            info = cluster.ClusterInfo(**data["info"]) if data["info"] else None
            if info is None or not _alive(info):
                if info is not None:
                    cluster.stop(info)
                info = cluster.start()
                data["info"] = asdict(info)
                self.state.write_text(json.dumps(data))
            return info

    def gone(self, info: cluster.ClusterInfo) -> None:
        """Stop the cluster now (a test needs it gone)."""
        with exclusive(self.lock_file, 120):
            cluster.stop(info)
            data = self._read()
            data["info"] = None
            self.state.write_text(json.dumps(data))

    def back(self, info: cluster.ClusterInfo) -> cluster.ClusterInfo:
        """Start a cluster that is `gone` again on its ports (a restarted head)."""
        with exclusive(self.lock_file, cluster.START_TIMEOUT_S * 2):
            new = cluster.restart(info)
            data = self._read()
            data["info"] = asdict(new)
            self.state.write_text(json.dumps(data))
            return new

    def leave(self) -> None:
        with exclusive(self.lock_file, 120):
            data = self._read()
            data["users"] = [u for u in data["users"] if u != os.getpid()]
            if not data["users"] and data["info"]:
                cluster.stop(cluster.ClusterInfo(**data["info"]))
                data["info"] = None
            self.state.write_text(json.dumps(data))

    @contextmanager
    def use(self, exclusive: bool) -> Iterator[None]:
        """flock LOCK_SH for a test that shares the cluster, LOCK_EX for one
        that kills part of it, whatever xdist's distribution mode."""
        fd = os.open(self.use_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)


@pytest.fixture(scope="session")
def ray_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    # an xdist worker's (its env says which): the workers share one cluster; alone (no workers,
    # also `tests/again.py`'s second look, which runs without the xdist plugin) its own
    base = tmp_path_factory.getbasetemp()
    shared = Shared(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)
    shared.join()
    try:
        yield shared
    finally:
        shared.leave()


@pytest.fixture
def shared_cluster(ray_shared: Shared, request: pytest.FixtureRequest) -> Iterator[cluster.ClusterInfo]:
    """The cluster, shared with concurrent tests. After the test, what it
    left reserved there (`leftovers.check`: an open `zapcli-*` placement
    group, a held bundle) fails its teardown, saying what, and is removed;
    a cluster that stays dirty is stopped (by pid) for the next test to
    start a clean one."""
    with ray_shared.use(exclusive=False):
        info = ray_shared.ensure()
        before = set(leftovers.open_groups(info))
        yield info
        zap = request.getfixturevalue("zap") if "zap" in request.fixturenames else None
        try:
            left = leftovers.check(info, before, zap)
        except leftovers.Dirty as exc:
            left = str(exc)
            ray_shared.gone(info)
    if left:
        pytest.fail(f"this test left a reservation on the Ray cluster: {left}", pytrace=False)


@pytest.fixture
def worker_node(ray_shared: Shared) -> Iterator[cluster.ClusterInfo]:
    """The cluster, alone, for a test that kills its worker node: restarted after."""
    with ray_shared.use(exclusive=True):
        info = ray_shared.ensure()
        yield info
        alive = cluster._alive_nodes(info.dashboard)
        if not any(cluster.WORKER_RESOURCE in n.get("resources_total", {}) for n in alive):
            cluster.start_worker(info)


@pytest.fixture
def doomed_cluster(ray_shared: Shared) -> Iterator[tuple[cluster.ClusterInfo, Shared]]:
    """The cluster, alone, for a test that stops all of it (`Shared.gone`)."""
    with ray_shared.use(exclusive=True):
        yield ray_shared.ensure(), ray_shared


OOM_RESOURCE = "zapcli_oom"


@pytest.fixture
def oom_node(ray_shared: Shared) -> Iterator[tuple[cluster.ClusterInfo, str]]:
    """The cluster, alone, with a third node whose Ray memory monitor kills
    every Ray worker there at once (its kill threshold is 1 % of the
    machine's memory, checked every 100 ms), as on a node that is out of
    memory; only work asking for `zapcli_oom` lands there. Yields the cluster
and that node's ZAPCLI_HOME; the node is stopped after, by pid."""
    with extra_node(ray_shared, "oom", OOM_RESOURCE, {
            "RAY_memory_usage_threshold": "0.01", "RAY_memory_monitor_refresh_ms": "100"}) as got:
        yield got


@contextmanager
def extra_node(ray_shared: Shared, name: str, resource: str,
               env: dict[str, str]) -> Iterator[tuple[cluster.ClusterInfo, str]]:
    """The cluster, alone, with a third node `name` (`env` for its raylet)
    where only work asking for `resource` lands: the cluster and that node's
    ZAPCLI_HOME; the node is stopped after, by pid, and its end awaited."""
    with ray_shared.use(exclusive=True):
        info = ray_shared.ensure()
        home = cluster.start_node(info, name, {resource: 4}, env)
        try:
            yield info, home
        finally:
            cluster.stop_node(info, home)
            cluster._wait(lambda: not any(resource in n.get("resources_total", {})
                                          for n in cluster._alive_nodes(info.dashboard)),
                          60, f"the {name} node's end", [])

