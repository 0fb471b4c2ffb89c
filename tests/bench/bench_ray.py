"""The Ray executor against the local one, on a real two-node cluster on this
machine (SPEC §15; not run by make test; needs `pip install -e '.[dev,ray]'`).

Usage: .venv/bin/python tests/bench/bench_ray.py [--runs 10] [--fanout 50]

Starts the cluster of tests/ray/cluster.py (head + worker node with its own
ZAPCLI_HOME), stops it by pid at the end. Prints one figure per line:

- spawn latency (`spawn --cli sh -- true`), ray vs local, medians of `runs`
  interleaved rounds, and the ratio;
- the delay from a line written on the node to it being visible on the
  caller, observed by `poll --no-wait` run back to back (median and max);
- `fanout` subagents (`sleep 1`) submitted at once, 16 at a time on either
  executor (session cap 16; on Ray each asks a quarter of the worker's custom
  resource, so 16 fit): seconds until `wait` says all completed, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.ray import cluster  # noqa: E402

ZAP = [sys.executable, "-m", "zapcli"]


def _env(root: Path, name: str, dashboard: str, **config: object) -> dict[str, str]:
    home, conf = root / name / "state", root / name / "config"
    conf.mkdir(parents=True)
    (conf / "config.yaml").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZAPCLI_", "RAY_"))}
    env.update(ZAPCLI_HOME=str(home), ZAPCLI_CONFIG_HOME=str(conf), ZAPCLI_SESSION=f"bench-{name}",
               RAY_ADDRESS=dashboard, NO_COLOR="1")
    return env


def _zap(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    res = subprocess.run([*ZAP, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if res.returncode != 0:
        raise RuntimeError(f"zapcli {' '.join(args)}: exit {res.returncode}: {res.stderr.strip()}")
    return res.stdout


def spawn_latency(root: Path, dashboard: str, runs: int) -> None:
    ray = _env(root, "spawn-ray", dashboard, executor="ray", max_concurrent=0,
               ray={"resources": {cluster.WORKER_RESOURCE: 0.25}})
    local = _env(root, "spawn-local", dashboard, max_concurrent=0)
    took: dict[str, list[float]] = {"ray": [], "local": []}
    ids: dict[str, list[str]] = {"ray": [], "local": []}
    for _ in range(runs):
        for name, env in (("local", local), ("ray", ray)):
            t0 = time.perf_counter()
            ids[name].append(_zap(env, "spawn", "--cli", "sh", "--", "true").strip())
            took[name].append(time.perf_counter() - t0)
            _zap(env, "wait", ids[name][-1], "--timeout", "120")  # untimed: nothing competes
    r, lo = statistics.median(took["ray"]), statistics.median(took["local"])
    print(f"spawn through Ray: median {r * 1000:.0f} ms (max {max(took['ray']) * 1000:.0f} ms)")
    print(f"spawn local: median {lo * 1000:.0f} ms (max {max(took['local']) * 1000:.0f} ms)")
    print(f"spawn ray / local: {r / lo:.2f}x")


def record_delay(root: Path, dashboard: str, lines: int = 20) -> None:
    env = _env(root, "delay", dashboard, executor="ray", ray={"resources": {cluster.WORKER_RESOURCE: 1}})
    task = f'for i in $(seq {lines}); do date +%s.%N; sleep 0.5; done'
    sid = _zap(env, "spawn", "--cli", "sh", "--", task).strip()
    out = Path(env["ZAPCLI_HOME"]) / "subagents" / f"{sid}.out"
    seen: dict[str, float] = {}
    give_up = time.time() + 120
    while len(seen) < lines and time.time() < give_up:
        _zap(env, "poll", "--no-wait", sid)
        now = time.time()
        if out.exists():
            for line in out.read_text().split():
                seen.setdefault(line, now)
    delays = [seen[w] - float(w) for w in seen]
    print(f"node line -> visible to poll --no-wait (back to back): median {statistics.median(delays) * 1000:.0f} ms, "
          f"max {max(delays) * 1000:.0f} ms (n={len(delays)})")


def fanout(root: Path, dashboard: str, n: int) -> None:
    results = {}
    for name, extra in (("local", {}), ("ray", {"executor": "ray", "ray": {
            "resources": {cluster.WORKER_RESOURCE: 0.25}}})):
        env = _env(root, f"fan-{name}", dashboard, max_concurrent=16, **extra)
        t0 = time.perf_counter()
        ids = [_zap(env, "spawn", "--cli", "sh", "--", "sleep 1; echo done").strip() for _ in range(n)]
        submitted = time.perf_counter() - t0
        _zap(env, "wait", *ids, "--timeout", "900", timeout=1000)
        results[name] = time.perf_counter() - t0
        print(f"{n} subagents at once, {name}: submitted in {submitted:.1f} s, all completed after "
              f"{results[name]:.1f} s")
    print(f"{n} at once ray / local: {results['ray'] / results['local']:.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--fanout", type=int, default=50)
    opts = ap.parse_args()
    t0 = time.monotonic()
    info = cluster.start()
    print(f"two-node cluster up in {time.monotonic() - t0:.1f} s")
    root = Path(tempfile.mkdtemp(prefix="zapcli-bench-ray-"))
    try:
        spawn_latency(root, info.dashboard, opts.runs)
        record_delay(root, info.dashboard)
        fanout(root, info.dashboard, opts.fanout)
    finally:
        cluster.stop(info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
