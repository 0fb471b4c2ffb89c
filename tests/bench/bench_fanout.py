"""What a subagent costs end to end: a fan-out, memory per runner, start-up.

Usage: .venv/bin/python tests/bench/bench_fanout.py [--rounds 5] [--fanout 50] [--runs 20]

All from a compiled, non-editable copy of the package (`_install.build()`),
state in temp folders, against `python -I -c pass` measured in the same run
(rounds interleave, so drift hits reference and commands alike):

- fanout: `--fanout` × `spawn --cli sh -- true`, one after another, then one
  `wait` for all of them; the whole wall time divided by the count, per
  subagent (goal <= 4x the floor).
- spawn, `poll --no-wait ID`, `--version`, `--help` (goals: spawn and poll
  <= 3x, --version and --help <= poll's time).
- spawn_wait_sleep2: `spawn --cli sh -- 'sleep 2'` then `wait ID` (goal
  <= 2 s + 200 ms).
- RSS: a running `sh` subagent's zapcli processes (the runner and any zapcli
  process under it), summed, while its `sleep` runs (goal <= 12 MB); a
  built-in agent's runner while the model (a scripted server on 127.0.0.1
  holding its answer) has not answered (goal <= 40 MB).

Prints one figure per line: the median and its ratio or goal. Also prints the
load average (`os.getloadavg`) at the start and the end: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import _install

SESSION = "bench-fanout"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="fan-outs and RSS samples")
    ap.add_argument("--fanout", type=int, default=50)
    ap.add_argument("--runs", type=int, default=20, help="runs of each single command")
    opts = ap.parse_args()
    inst = _install.build()
    try:
        inst.use_in_process()
        import _fixtures

        print(f"load_average_start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        _commands(inst, _fixtures, opts.runs)
        _fanout(inst, _fixtures, opts.rounds, opts.fanout)
        _memory(inst, _fixtures, opts.rounds)
        print(f"load_average_end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    finally:
        inst.cleanup()


def _ref(inst: _install.Install, env: dict[str, str]) -> float:
    return inst.timed(inst.ref_pass, env)[0]


def _line(name: str, ms: float, ref: float, note: str = "") -> None:
    print(f"{name}_median_ms {ms:.1f}  ratio_vs_python_pass {_install.fmt_ratio(ms, ref)}"
          + (f"  ({note})" if note else ""))


def _commands(inst: _install.Install, fx: Any, runs: int) -> None:
    home = inst.new_home("cmds")
    env = inst.env(home, session=SESSION)
    sid = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "true"), env).stdout.decode().strip()
    fx.wait_done(home, sid)
    spawn_cmd = inst.zapcli("spawn", "--cli", "sh", "--", "true")

    def spawn() -> float:
        t, proc = inst.timed(spawn_cmd, env)
        fx.wait_done(home, proc.stdout.decode().strip())  # untimed: its runner never competes
        return t

    def spawn_wait_sleep2() -> float:
        t0 = time.perf_counter()
        new = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "sleep 2"), env).stdout.decode().strip()
        inst.run(inst.zapcli("wait", new), env)
        return time.perf_counter() - t0

    cmd = lambda *a: (lambda: inst.timed(inst.zapcli(*a), env)[0])  # noqa: E731
    samples = _install.interleaved(runs, {
        "python_pass": lambda: _ref(inst, env),
        "spawn": spawn,
        "poll_no_wait": cmd("poll", "--no-wait", sid),
        "version": cmd("--version"),
        "help": cmd("--help"),
    })
    sleeps = _install.interleaved(max(3, runs // 4), {"spawn_wait_sleep2": spawn_wait_sleep2}, warmup=1)
    ref = _install.median_ms(samples.pop("python_pass"))
    print(f"python_pass_median_ms {ref:.1f}  (reference: bench venv python -I -c pass, {runs} runs)")
    poll = _install.median_ms(samples["poll_no_wait"])
    goals = {"spawn": "goal <= 3x", "poll_no_wait": "goal <= 3x",
             "version": f"goal <= poll's {poll:.1f} ms", "help": f"goal <= poll's {poll:.1f} ms"}
    for name, vals in samples.items():
        _line(name, _install.median_ms(vals), ref, goals[name])
    ms = _install.median_ms(sleeps["spawn_wait_sleep2"])
    print(f"spawn_wait_sleep2_median_ms {ms:.1f}  over_2s_ms {ms - 2000:.1f}  (goal: over <= 200 ms)")


def _fanout(inst: _install.Install, fx: Any, rounds: int, n: int) -> None:
    spawn_cmd = inst.zapcli("spawn", "--cli", "sh", "--", "true")
    per: list[float] = []
    refs: list[float] = []
    for r in range(rounds + 1):
        home = inst.new_home("fan")
        env = inst.env(home, session=f"{SESSION}-{r}")
        refs += [_ref(inst, env) for _ in range(5)]
        t0 = time.perf_counter()
        ids = [inst.run(spawn_cmd, env).stdout.decode().strip() for _ in range(n)]
        inst.run(inst.zapcli("wait", *ids), env, timeout=600)
        took = time.perf_counter() - t0
        refs += [_ref(inst, env) for _ in range(5)]  # before and after: drift hits both
        for sid in ids:
            fx.wait_done(home, sid)  # every runner gone before the next round
            status = next((rec.get("status") for rec in fx.trail_records(home, sid)
                           if rec.get("type") == "status"), None)
            if status != "completed":
                raise RuntimeError(f"{sid} ended {status}")
        if r:  # the first round warms the caches
            per.append(took / n)
        shutil.rmtree(home, ignore_errors=True)
    ref = _install.median_ms(refs)
    ms = statistics.median(per) * 1000
    _line(f"fanout{n}_per_subagent", ms, ref,
          f"goal <= 4x; {n} x spawn --cli sh -- true then wait, {rounds} rounds, "
          f"python_pass {ref:.1f} ms in the same rounds")


def _zapcli_rss(pid: int) -> tuple[int, int]:
    """(bytes, processes): RSS of `pid` and every zapcli process under it."""
    import psutil

    root = psutil.Process(pid)
    total, count = 0, 0
    for p in [root, *root.children(recursive=True)]:
        try:
            cmd = p.cmdline()
            if p is root or any("zapcli" in part for part in cmd[:4]):
                total += p.memory_info().rss
                count += 1
        except psutil.Error:
            continue
    return total, count


def _runner_pid(fx: Any, home: Path, sid: str, timeout: float = 30.0) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        recs = fx.trail_records(home, sid)
        if any(r.get("type") == "start" for r in recs):
            return next(r["pid"] for r in recs if r.get("type") == "process")
        time.sleep(0.01)
    raise RuntimeError(f"{sid} did not start")


def _memory(inst: _install.Install, fx: Any, rounds: int) -> None:
    from zapcli.testing import ScriptedServer

    home = inst.new_home("rss")
    hold = 4.0
    with ScriptedServer([{"turns": [{"text": "done.", "delay_s": hold}]}]) as srv:
        env = inst.env(home, session=SESSION)
        agent_env = inst.env(home, session=SESSION, extra={
            "OPENAI_BASE_URL": srv.base_url, "ZAPCLI_MODEL": "scripted", "OPENAI_API_KEY": "x"})
        sh_rss: list[float] = []
        agent_rss: list[float] = []
        for r in range(rounds):
            sid = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "sleep 1.5"), env).stdout.decode().strip()
            pid = _runner_pid(fx, home, sid)
            time.sleep(0.8)  # its sleep runs; the runner only pumps
            sh_rss.append(_zapcli_rss(pid)[0] / 2**20)
            fx.wait_done(home, sid)
            seen = len(srv.requests)
            sid = inst.run(inst.zapcli("spawn", f"rss probe {r}"), agent_env).stdout.decode().strip()
            pid = _runner_pid(fx, home, sid)
            end = time.monotonic() + 30
            while len(srv.requests) <= seen and time.monotonic() < end:
                time.sleep(0.01)
            time.sleep(hold / 2)  # the request is in; the model holds its answer
            agent_rss.append(_zapcli_rss(pid)[0] / 2**20)
            if fx.wait_done(home, sid, timeout=60) != "completed":
                raise RuntimeError(f"{sid} did not complete")
    print(f"rss_sh_subagent_median_mb {statistics.median(sh_rss):.1f}  (goal <= 12 MB; zapcli processes "
          f"of a running sh subagent, {rounds} samples, max {max(sh_rss):.1f})")
    print(f"rss_agent_runner_median_mb {statistics.median(agent_rss):.1f}  (goal <= 40 MB; built-in agent "
          f"runner waiting on the model, {rounds} samples, max {max(agent_rss):.1f})")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
