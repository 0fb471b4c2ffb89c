"""The Ray executor against the local one, on a real two-node cluster on this
machine (docs/explanation/rules.md#remote-execution, docs/explanation/rules.md#fleets-traces-teams; not run by make test; needs `pip install -e '.[dev,ray]'`).

Usage: .venv/bin/python tests/bench/bench_ray.py [--runs 10] [--fanout 50] [--fleet 1000]
           [--only spawn,delay,fanout,fleet]

Starts the cluster of tests/ray/cluster.py (head + worker node with its own
ZAPCLI_HOME), stops it by pid at the end. Every zapcli, the caller's and the
nodes' (Ray's workers, the pool, the runners), is the byte-compiled copy of
`_install.build()`: this environment writes no bytecode, and an editable
install would time the compiler. Prints one figure per line, each beside its
goal (issue #20) where it has one:

- spawn latency (`spawn --cli sh -- true`), ray vs local, medians of `runs`
  interleaved rounds (the pool already running), and the ratio;
- a node's line visible to `poll`: the delay from a line written on the
  node to it being in the caller's output, `poll --no-wait` run back to
  back (median and max; goal: median <= 1 s);
- `fanout` subagents (`sleep 1`) submitted at once, 16 at a time on either
  executor (session cap 16; on Ray each asks a quarter of the worker's custom
  resource, so 16 fit): seconds until `wait` says all completed, and the
  ratio (goal: Ray <= 1.5x local; issue 32: it was 1.71x on a quiet
  machine), with the machine's load average; and where a subagent's time
  goes on each (medians, from the trails: launch to the runner's start,
  the runner's own time, its end to the caller's knowing it);
- `fleet` `sh` subagents (`echo N`) on the cluster, 16 at a time: all
  completed, none lost, none run twice (one runner start each in the node
  trails), the caller's CPU (every zapcli command this bench ran), the head
  node's CPU (its Ray processes and what they started) and the wall time,
  each per subagent.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _install  # noqa: E402

from tests.ray import cluster  # noqa: E402

INSTALL: _install.Install | None = None  # set by main()
QUARTER = {"resources": {cluster.WORKER_RESOURCE: 0.25}}
BRIEF = {"pool_idle_s": 5}  # a scenario's pool is gone before the next one (each is another caller)


def _env(root: Path, name: str, dashboard: str, **config: object) -> dict[str, str]:
    assert INSTALL is not None
    home, conf = root / name / "state", root / name / "config"
    conf.mkdir(parents=True)
    (conf / "config.yaml").write_text(json.dumps(config))
    env = INSTALL.env(home, session=f"bench-{name}", extra={"ZAPCLI_CONFIG_HOME": str(conf),
                                                            "RAY_ADDRESS": dashboard})
    return {k: v for k, v in env.items() if not k.startswith("RAY_") or k == "RAY_ADDRESS"}


def _zap(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    assert INSTALL is not None
    res = subprocess.run(INSTALL.zapcli(*args), env=env, capture_output=True, text=True, timeout=timeout,
                         cwd=INSTALL.scratch)
    if res.returncode != 0:
        raise RuntimeError(f"zapcli {' '.join(args[:3])}: exit {res.returncode}: {res.stderr.strip()[:500]}")
    return res.stdout


def _met(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def spawn_latency(root: Path, dashboard: str, runs: int) -> None:
    ray = _env(root, "spawn-ray", dashboard, executor="ray", max_concurrent=0, ray={**QUARTER, **BRIEF})
    local = _env(root, "spawn-local", dashboard, max_concurrent=0)
    _zap(ray, "wait", _zap(ray, "spawn", "--cli", "sh", "--", "true").strip())  # its pool starts
    took: dict[str, list[float]] = {"ray": [], "local": []}
    for _ in range(runs):
        for name, env in (("local", local), ("ray", ray)):
            t0 = time.perf_counter()
            sid = _zap(env, "spawn", "--cli", "sh", "--", "true").strip()
            took[name].append(time.perf_counter() - t0)
            _zap(env, "wait", sid, "--timeout", "120")  # untimed: nothing competes
    r, lo = statistics.median(took["ray"]), statistics.median(took["local"])
    print(f"ray_spawn_median_ms {r * 1000:.0f} (max {max(took['ray']) * 1000:.0f}); local "
          f"{lo * 1000:.0f} ms; ratio {r / lo:.2f}x")


def record_delay(root: Path, dashboard: str, lines: int = 20) -> None:
    env = _env(root, "delay", dashboard, executor="ray", ray={"resources": {cluster.WORKER_RESOURCE: 1}, **BRIEF})
    task = f'for i in $(seq {lines}); do date +%s.%N; sleep 0.5; done'
    sid = _zap(env, "spawn", "--cli", "sh", "--", task).strip()
    out = Path(env["ZAPCLI_HOME"]) / "subagents" / f"{sid}.out"
    seen: dict[str, float] = {}
    give_up = time.time() + 180
    while len(seen) < lines and time.time() < give_up:
        _zap(env, "poll", "--no-wait", sid)
        now = time.time()
        if out.exists():
            for line in out.read_text().split():
                seen.setdefault(line, now)
    delays = [seen[w] - float(w) for w in seen]
    med = statistics.median(delays)
    print(f"ray_node_line_to_poll_median_ms {med * 1000:.0f} (max {max(delays) * 1000:.0f}, n={len(delays)}; "
          f"goal <= 1000 ms) {_met(med <= 1.0)}")


def fanout(root: Path, dashboard: str, n: int) -> None:
    results = {}
    time.sleep(8)  # the earlier scenarios' pools have ended
    for name, extra in (("local", {}), ("ray", {"executor": "ray", "ray": {**QUARTER, **BRIEF}})):
        env = _env(root, f"fan-{name}", dashboard, max_concurrent=16, **extra)
        if name == "ray":  # the pool is long-lived: measured running, as it is for a fleet
            _zap(env, "wait", _zap(env, "spawn", "--cli", "sh", "--", "true").strip())
        t0 = time.perf_counter()
        ids = [_zap(env, "spawn", "--cli", "sh", "--", "sleep 1; echo done").strip() for _ in range(n)]
        submitted = time.perf_counter() - t0
        _zap(env, "wait", *ids, "--timeout", "900", timeout=1000)
        results[name] = time.perf_counter() - t0
        print(f"ray_fanout_{name}_s {results[name]:.1f} ({n} x sleep 1, 16 at a time; submitted in "
              f"{submitted:.1f} s)")
        _breakdown(name, Path(env["ZAPCLI_HOME"]), ids)
    ratio = results["ray"] / results["local"]
    load = " ".join(f"{x:.2f}" for x in psutil.getloadavg())
    print(f"ray_fanout_ratio {ratio:.2f}x ({n} x sleep 1, 16 at a time, ray / local; goal <= 1.5x; "
          f"load average {load} on {psutil.cpu_count()} cores) {_met(ratio <= 1.5)}")


def _breakdown(name: str, home: Path, ids: list[str]) -> None:
    """Medians over the fan-out's subagents, from the caller's trails: its
    launch (`process`) to its runner's `start`, the runner's own time
    (`start` to its terminal `status`), and that end to the caller knowing
    it (the `collected` record on Ray; the runner writes the end itself
    locally), in ms."""
    from datetime import datetime

    def ts(rec: dict | None) -> float | None:
        return datetime.fromisoformat(rec["ts"].replace("Z", "+00:00")).timestamp() if rec else None

    parts: dict[str, list[float]] = {"launch_to_start": [], "run": [], "end_to_home": []}
    for sid in ids:
        recs = [json.loads(line) for line in (home / "subagents" / f"{sid}.jsonl").read_text().splitlines()
                if line.strip()]
        first = {r["type"]: r for r in reversed(recs)}
        launched, started, home_at = ts(first.get("process")), ts(first.get("start")), ts(first.get("collected"))
        ended = ts(next((r for r in recs if r["type"] == "status" and r.get("status") == "completed"), None))
        if launched and started:
            parts["launch_to_start"].append(started - launched)
        if started and ended:
            parts["run"].append(ended - started)
        if ended and home_at:
            parts["end_to_home"].append(home_at - ended)
    said = ", ".join(f"{k} {statistics.median(v) * 1000:.0f}" for k, v in parts.items() if v)
    print(f"ray_fanout_{name}_per_subagent_ms {said}")


def _cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            continue
    return total


def _head(info: cluster.ClusterInfo) -> list[psutil.Process]:
    worker = {p.pid for p in cluster.processes(info.temp_dir, info.worker_home)}
    return [p for p in cluster.processes(info.temp_dir) if p.pid not in worker]


def fleet(root: Path, info: cluster.ClusterInfo, n: int) -> None:
    (Path(info.temp_dir) / "worker-config" / "config.yaml").write_text("max_kept: 0\n")  # keep every node trail
    env = _env(root, "fleet", info.dashboard, executor="ray", max_concurrent=16, max_kept=0, ray=QUARTER)
    _zap(env, "wait", _zap(env, "spawn", "--cli", "sh", "--", "true").strip())  # its pool starts
    before = {p.name for p in (Path(info.worker_home) / "subagents").glob("*.jsonl")}
    head0, mine0 = _cpu(_head(info)), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(4) as spawners:  # four callers' spawns at once
        ids = list(spawners.map(lambda i: _zap(env, "spawn", "--cli", "sh", "--", f"echo {i}").strip(), range(n)))
    views = json.loads(_zap(env, "wait", *ids, "--timeout", "3600", "--json", timeout=3700))["subagents"]
    wall = time.perf_counter() - t0
    mine1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    head = _cpu(_head(info)) - head0
    caller = (mine1.ru_utime + mine1.ru_stime) - (mine0.ru_utime + mine0.ru_stime)
    done = sum(v["status"] == "completed" for v in views)
    lost = sum(v["status"] == "lost" for v in views)
    right = sum(_zap(env, "output", sid) == f"{i}\n" for i, sid in enumerate(ids))
    twice = 0
    for path in (Path(info.worker_home) / "subagents").glob("*.jsonl"):
        if path.name not in before:
            starts = sum('"type":"start"' in line for line in path.read_text().splitlines())
            twice += starts > 1
    print(f"ray_fleet_completed {done}/{n} (lost {lost}, run twice {twice}, right output {right}; goal: all "
          f"completed, 0 lost, 0 run twice) {_met(done == n and lost == 0 and twice == 0 and right == n)}")
    print(f"ray_fleet_per_subagent caller CPU {caller / n * 1000:.0f} ms, head CPU {head / n * 1000:.0f} ms, "
          f"wall {wall / n * 1000:.0f} ms ({n} x echo, 16 at a time, 4 spawning at once; total {wall:.0f} s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--fanout", type=int, default=50)
    ap.add_argument("--fleet", type=int, default=1000)
    ap.add_argument("--only", default="spawn,delay,fanout,fleet",
                    help="the scenarios to run, comma-separated (spawn, delay, fanout, fleet)")
    opts = ap.parse_args()
    only = set(opts.only.split(","))
    global INSTALL
    INSTALL = _install.build("zapcli-bench-ray-")
    t0 = time.monotonic()
    info = cluster.start(extra_env={"PYTHONPATH": str(INSTALL.root)})
    print(f"ray_cluster_up_s {time.monotonic() - t0:.1f} (two nodes; the machine is shared: figures under load)")
    root = Path(tempfile.mkdtemp(prefix="zapcli-bench-ray-"))
    try:
        if "spawn" in only:
            spawn_latency(root, info.dashboard, opts.runs)
        if "delay" in only:
            record_delay(root, info.dashboard)
        if "fanout" in only:
            fanout(root, info.dashboard, opts.fanout)
        if opts.fleet and "fleet" in only:
            fleet(root, info, opts.fleet)
    finally:
        cluster.stop(info)
        INSTALL.cleanup()
        shutil.rmtree(root, ignore_errors=True)  # the subagents' state and work folders
    return 0


if __name__ == "__main__":
    sys.exit(main())
