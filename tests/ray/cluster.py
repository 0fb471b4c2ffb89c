"""A real two-node Ray cluster on this machine, for the Ray executor tests.

Imports the standard library, psutil and the `ray` command line (as a
subprocess; `ray` itself is not imported here). The head runs
`ray start --head --block` with its dashboard on a free port; the worker is its
own `ray start --address ... --block` with the custom resource
`zapcli_worker` and its own `ZAPCLI_HOME` (and config folder), so a job
placed on it keeps its files there (as on another machine: nothing is shared
with the caller).

The head has no `ZAPCLI_HOME` (and a `HOME` of its own in the temp dir), as
a local cluster started by hand: the Ray executor must keep a caller's
subagents that land there inside the caller's own state folder.

Every process of the cluster inherits `ZAPCLI_RAY_TEST=<temp dir>` from the
`ray start` that made it, and the worker node's processes also its
`ZAPCLI_HOME`: `stop` and `kill_worker` end exactly those processes, by pid —
never `ray stop`, which would end every Ray process on the machine.
`restart` starts a stopped cluster again on the same ports (a new session,
as when a head restarts).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

RAY_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "ray"
MARKER = "ZAPCLI_RAY_TEST"
WORKER_RESOURCE = "zapcli_worker"
START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ClusterInfo:
    """What tests need, JSON-able so xdist workers can share one cluster."""

    temp_dir: str
    dashboard: str  # http://127.0.0.1:PORT, what RAY_ADDRESS / ray.address hold
    gcs_address: str  # IP:PORT (the machine's interface address, not 127.0.0.1)
    head_pid: int
    worker_pid: int
    worker_home: str  # the worker node's ZAPCLI_HOME
    head_home: str  # the head's HOME (it has no ZAPCLI_HOME)
    started_s: float = 0.0  # how long the start took
    gcs_port: int = 0
    dash_port: int = 0


def _ray_start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([str(RAY_BIN), "start", "--block", "--disable-usage-stats",
                                 "--min-worker-port", "0", "--max-worker-port", "0", *args],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, close_fds=True)


def _get_json(url: str, timeout: float = 2.0) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - 127.0.0.1 only
        return json.loads(resp.read())


def _alive_nodes(dashboard: str) -> list[dict]:
    data = _get_json(f"{dashboard}/api/v0/nodes?detail=true&limit=100")
    nodes = data["data"]["result"]["result"]  # type: ignore[index]
    return [n for n in nodes if n.get("state") == "ALIVE"]


def _wait(cond, timeout: float, what: str, procs: list[subprocess.Popen]):  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while True:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: `ray start` exited with {p.returncode}")
        try:
            value = cond()
        except (OSError, ValueError, KeyError, TypeError):
            value = None
        if value:
            return value
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.25)


def _base_env(temp: Path, extra_env: dict[str, str] | None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "ZAPCLI_"))}
    # As on a cluster image: zapcli and Ray are installed on the nodes.
    base["PATH"] = f"{RAY_BIN.parent}{os.pathsep}{base.get('PATH', '')}"
    base.update({MARKER: str(temp), "RAY_USAGE_STATS_ENABLED": "0",
                 # A dead node is noticed in ~2 s instead of Ray's default ~30 s.
                 "RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "1000",
                 "RAY_health_check_failure_threshold": "3", **(extra_env or {})})
    return base


def start(num_cpus_head: int = 1, num_cpus_worker: int = 1,
          extra_env: dict[str, str] | None = None, ports: tuple[int, int] | None = None) -> ClusterInfo:
    """Start head + worker (on the given GCS and dashboard ports, else free
    ones); wait until both nodes are ALIVE. On any failure everything
    already started is stopped before the error is raised."""
    t0 = time.monotonic()
    temp = Path(tempfile.mkdtemp(prefix="zr", dir="/tmp"))  # short: Ray's socket paths are capped
    head_home, worker_home = temp / "head-user", temp / "worker-home"
    head_home.mkdir()
    worker_home.mkdir()
    (temp / "worker-config").mkdir()
    base = _base_env(temp, extra_env)
    gcs_port, dash_port = ports or (free_port(), free_port())
    dashboard = f"http://127.0.0.1:{dash_port}"
    info = ClusterInfo(str(temp), dashboard, "", 0, 0, str(worker_home), str(head_home),
                       gcs_port=gcs_port, dash_port=dash_port)
    try:
        head = _ray_start(["--head", "--port", str(gcs_port), "--dashboard-host", "127.0.0.1",
                           "--dashboard-port", str(dash_port), "--include-dashboard", "true",
                           "--ray-client-server-port", str(free_port()),
                           "--dashboard-agent-listen-port", str(free_port()),
                           "--num-cpus", str(num_cpus_head), "--object-store-memory", "80000000",
                           "--temp-dir", str(temp)],
                          {**base, "HOME": str(head_home)}, temp / "head.log")
        info.head_pid = head.pid
        addr_file = temp / "ray_current_cluster"
        info.gcs_address = _wait(lambda: addr_file.read_text().strip(), START_TIMEOUT_S,
                                 "the head's GCS address", [head])
        _wait(lambda: _alive_nodes(dashboard), START_TIMEOUT_S, "the head node", [head])
        start_worker(info, num_cpus_worker, extra_env)
        # The job agent of the head answers only once the head is fully up.
        _wait(lambda: _get_json(f"{dashboard}/api/jobs/") is not None, START_TIMEOUT_S,
              "the jobs API", [head])
    except BaseException:
        stop(info)
        raise
    info.started_s = time.monotonic() - t0
    return info


def restart(info: ClusterInfo) -> ClusterInfo:
    """A stopped cluster started again on its ports: a new session."""
    return start(ports=(info.gcs_port, info.dash_port))


def start_worker(info: ClusterInfo, num_cpus: int = 1, extra_env: dict[str, str] | None = None) -> None:
    """(Re)start the worker node (after `kill_worker`); wait until it is ALIVE."""
    before = {n["node_id"] for n in _alive_nodes(info.dashboard)}
    temp = Path(info.temp_dir)
    worker = _ray_start(["--address", info.gcs_address, "--num-cpus", str(num_cpus),
                         "--resources", json.dumps({WORKER_RESOURCE: 4}),
                         "--dashboard-agent-listen-port", str(free_port()),
                         "--object-store-memory", "80000000"],
                        {**_base_env(temp, extra_env), "ZAPCLI_HOME": info.worker_home,
                         "ZAPCLI_CONFIG_HOME": str(temp / "worker-config")},
                        temp / "worker.log")
    info.worker_pid = worker.pid
    _wait(lambda: any(n["node_id"] not in before and WORKER_RESOURCE in n.get("resources_total", {})
                      for n in _alive_nodes(info.dashboard)), START_TIMEOUT_S, "the worker node", [worker])


def start_node(info: ClusterInfo, name: str, resources: dict[str, float], env: dict[str, str]) -> str:
    """Start one more node (no CPUs: only work asking for `resources` lands
    there) with its own ZAPCLI_HOME `<temp>/<name>-home` and `env` for its
    raylet (e.g. a memory monitor's settings); wait until it is ALIVE.
    Returns its home (what `stop_node` ends it by)."""
    before = {n["node_id"] for n in _alive_nodes(info.dashboard)}
    temp = Path(info.temp_dir)
    home = temp / f"{name}-home"
    home.mkdir(exist_ok=True)
    proc = _ray_start(["--address", info.gcs_address, "--num-cpus", "0", "--resources", json.dumps(resources),
                       "--dashboard-agent-listen-port", str(free_port()), "--object-store-memory", "80000000"],
                      {**_base_env(temp, env), "ZAPCLI_HOME": str(home)}, temp / f"{name}.log")
    try:
        _wait(lambda: any(n["node_id"] not in before for n in _alive_nodes(info.dashboard)),
              START_TIMEOUT_S, f"the {name} node", [proc])
    except BaseException:
        stop_node(info, str(home))
        raise
    return str(home)


def stop_node(info: ClusterInfo, home: str) -> None:
    """End a node `start_node` started: its `ray start --block` first (it
    stops its node's processes), then whatever else of it is left, by pid."""
    procs = processes(info.temp_dir, home)
    blocks = [p for p in procs if "--block" in " ".join(_cmdline(p))]
    _end(blocks, 10.0)
    _end(processes(info.temp_dir, home), 3.0)


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def processes(temp_dir: str, home: str | None = None) -> list[psutil.Process]:
    """This cluster's processes (or only one node's: those with ZAPCLI_HOME=home)."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            env = proc.environ()
        except (psutil.Error, OSError):
            continue
        if env.get(MARKER) == temp_dir and (home is None or env.get("ZAPCLI_HOME") == home):
            found.append(proc)
    for proc in list(found):  # and what they started (a job's driver, its children)
        try:
            found.extend(c for c in proc.children(recursive=True) if c not in found)
        except psutil.Error:
            continue
    return found


def _end(procs: list[psutil.Process], grace_s: float) -> None:
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)


def kill_worker(info: ClusterInfo) -> int:
    """The worker node dies as a machine would: SIGKILL to every process of it
    at once (raylet, agents, Ray workers, job drivers, zapcli runners).
    Returns how many processes were killed."""
    procs = processes(info.temp_dir, info.worker_home)
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)
    return len(procs)


def stop(info: ClusterInfo, remove: bool = True) -> None:
    """End this cluster: the two `ray start --block` (they stop their node's
    processes), then whatever else carries our marker, then the temp dir."""
    blocks = []
    for pid in (info.worker_pid, info.head_pid):
        if pid:
            try:
                blocks.append(psutil.Process(pid))
            except psutil.Error:
                pass
    _end(blocks, 10.0)
    if info.temp_dir:
        _end(processes(info.temp_dir), 3.0)
        if remove:
            shutil.rmtree(info.temp_dir, ignore_errors=True)


def main() -> None:
    """`python -m tests.ray.cluster`: start, print the info, stop on Enter."""
    info = start()
    print(json.dumps(asdict(info), indent=1), flush=True)
    try:
        input("cluster up; Enter stops it\n")
    finally:
        stop(info)


if __name__ == "__main__":
    main()
