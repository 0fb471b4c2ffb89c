"""A fleet spawned by one `zapcli run`'s model: what each subagent costs, and none lost.

Usage: .venv/bin/python tests/bench/bench_run_fleet.py [--count 1000] [--batch 50] [--rounds 1]
       .venv/bin/python tests/bench/bench_run_fleet.py --count 200 --against main --rounds 2

Issue 32, item 1: a `zapcli run` whose model (a ScriptedServer on 127.0.0.1,
answering at once) spawns `--count` `sh` subagents running `true` through its
`subagent` tool (`{"action": "spawn", "cli": "sh", "task": "true"}`), `--batch`
parallel tool calls per model turn (they run in parallel, as a model's calls
in one message do), then calls `wait` for all of them and answers. The cap is
the default one (`max_concurrent`, 8: the rest queue and start as slots free);
`--max-subagents 0` lifts the run's own limit on how many it starts (default
32), `--approval full --no-sandbox` so a shell spawn needs no person and no
bubblewrap (what is measured is zapcli's own cost); `--sandbox`: each in the
sandbox, as a model's spawns run by default (the sandbox's preparation, its
placeholders and bubblewrap in every runner).

From a compiled, non-editable copy of the package (`_install.build()`), state
in a temp folder per round, against `python -I -c pass` measured in the same
rounds (before and after each). Prints, per round and as medians:
- the whole run's wall time, and per subagent (wall / count) with its ratio
  to the floor;
- subagents lost: every spawn record the run's session holds must end
  `completed` in its own trail, and their number must be `--count` (anything
  else is counted lost and the bench exits 1);
- the run's own CPU (user + system of the `zapcli run` process, sampled until
  it exits; the runners are detached, not its children), and per subagent.
`--against REF`: also git REF's zapcli (e.g. main), round by round with this
tree's, alternating which goes first: an A/B in one run.

`--queued N` (default 1000; 0 skips it): the queue's drain alone, with N
queued subagents and the cap's 8 running ones (real `sleep` processes) in a
session: `spawn --cli sh -- true` there (a new process: its drain reads
every active trail cold; the new one queues), and, in one process, a first
drain (cold) and the next ones (warm, nothing changed), `--runs` times each.
Also prints the load average at the start and the end: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _install

SESSION = "bench-run-fleet"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1000, help="subagents the model spawns")
    ap.add_argument("--batch", type=int, default=50, help="spawn calls per model turn")
    ap.add_argument("--rounds", type=int, default=1, help="runs of the whole fleet")
    ap.add_argument("--against", metavar="REF", help="also git REF's zapcli, round by round")
    ap.add_argument("--sandbox", action="store_true", help="the run's shells in the sandbox "
                    "(bubblewrap), as a model's spawns run by default")
    ap.add_argument("--queued", type=int, default=1000, help="queued subagents for the drain "
                    "figures (0: none)")
    ap.add_argument("--runs", type=int, default=10, help="runs of each drain figure")
    ap.add_argument("--no-fleet", action="store_true", help="only the drain figures")
    opts = ap.parse_args()
    if opts.count < 1 or opts.batch < 1 or opts.rounds < 1:
        ap.error("--count, --batch and --rounds are at least 1")
    installs = {"": _install.build()}
    if opts.against:
        installs[f"{opts.against}_"] = _install.build(prefix="zapcli-bench-ref-", ref=opts.against)
    try:
        installs[""].use_in_process()
        import _fixtures

        print(f"load_average_start {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        got: dict[str, list[dict[str, float]]] = {label: [] for label in installs}
        refs: list[float] = []
        order = list(installs.items())
        lost = 0
        if opts.queued:
            _drains(installs, opts.queued, opts.runs)
        for r in range(0 if opts.no_fleet else opts.rounds):
            for label, inst in order if r % 2 == 0 else order[::-1]:
                env = inst.env(None, session=SESSION)
                refs += [inst.timed(inst.ref_pass, env)[0] for _ in range(5)]
                fig = _fleet(inst, _fixtures, opts.count, opts.batch, f"{label}{r}", opts.sandbox)
                refs += [inst.timed(inst.ref_pass, env)[0] for _ in range(5)]
                got[label].append(fig)
                lost += int(fig["lost"])
                print(f"round {r} {label or 'this tree'}: wall {fig['wall']:.1f} s, "
                      f"lost {int(fig['lost'])}, run cpu {fig['cpu']:.1f} s", flush=True)
        if opts.no_fleet:
            print(f"load_average_end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            return 0
        ref = _install.median_ms(refs)
        print(f"python_pass_median_ms {ref:.1f}  (reference: bench venv python -I -c pass, "
              f"{len(refs)} runs around the fleets)")
        for label, figs in got.items():
            _print(label, figs, ref, opts)
        print(f"load_average_end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 1 if lost else 0
    finally:
        for inst in installs.values():
            inst.cleanup()


def _spawn_call(n: int) -> dict[str, Any]:
    return {"name": "subagent", "arguments": {"action": "spawn", "cli": "sh", "task": "true",
                                              "timeout": 600}}


def _script(count: int, batch: int) -> list[dict[str, Any]]:
    turns = [{"tool_calls": [_spawn_call(i) for i in range(start, min(start + batch, count))]}
             for start in range(0, count, batch)]
    turns.append({"tool_calls": [{"name": "subagent", "arguments": {"action": "wait",
                                                                    "timeout": 3600}}]})
    turns.append({"text": "fleet done"})
    return [{"match": "FLEET", "turns": turns}]


def _fleet(inst: _install.Install, fx: Any, count: int, batch: int, tag: str,
           sandbox: bool = False) -> dict[str, float]:
    """One run of the fleet in a fresh state folder: its figures."""
    import psutil

    from zapcli.testing import ScriptedServer

    home = inst.new_home(f"fleet-{tag}")
    with ScriptedServer(_script(count, batch)) as srv:
        env = inst.env(home, session=f"{SESSION}-{tag}", extra={
            "OPENAI_BASE_URL": srv.base_url, "ZAPCLI_MODEL": "scripted", "OPENAI_API_KEY": "x"})
        argv = inst.zapcli("run", "--approval", "full", "--sandbox" if sandbox else "--no-sandbox",
                           "--max-subagents", "0",
                           "--timeout", "3600", "--json", "--", f"FLEET of {count}")
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=inst.scratch, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        me = psutil.Process(proc.pid)
        cpu = 0.0
        out: list[bytes] = []
        import threading

        readers = [threading.Thread(target=lambda s=s: out.append(s.read()), daemon=True)
                   for s in (proc.stdout, proc.stderr)]
        for t in readers:
            t.start()
        while proc.poll() is None:
            try:
                times = me.cpu_times()
                cpu = times.user + times.system
            except psutil.Error:
                pass
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        for t in readers:
            t.join()
    stdout = b"".join(o for o in out if o.lstrip().startswith(b"{"))
    if proc.returncode != 0 or not stdout:
        raise RuntimeError(f"the run exited {proc.returncode}: {b''.join(out)[-3000:].decode('utf-8', 'replace')}")
    doc = json.loads(stdout)
    ended: dict[str, str | None] = {}
    for path in (home / "subagents").glob("*.jsonl"):
        recs = fx.trail_records(home, path.stem)
        spawn = next((rec for rec in recs if rec.get("type") == "spawn"), None)
        if spawn is None or (spawn.get("run") or {}).get("id") != doc["run_id"]:
            continue
        ended[path.stem] = next((rec.get("status") for rec in recs if rec.get("type") == "status"), None)
    completed = sum(1 for s in ended.values() if s == "completed")
    lost = count - completed
    if lost:
        others = sorted({str(s) for s in ended.values() if s != "completed"})
        print(f"  {tag}: {len(ended)} trails, {completed} completed, other ends {others}, "
              f"the run's document lists {len(doc.get('subagents', []))}, undelivered "
              f"{len(doc.get('undelivered', []))}", flush=True)
    shutil.rmtree(home, ignore_errors=True)
    return {"wall": wall, "lost": float(lost), "cpu": cpu, "requests": float(len(srv.requests))}


_DRAIN = """
import os, sys, time
from zapcli.config import load_settings
from zapcli.lifecycle import queue
settings = load_settings(lenient=True)
out = []
for i in range(int(sys.argv[1]) + 1):
    t0 = time.perf_counter()
    started = queue.drain(os.environ["ZAPCLI_SESSION"], settings)
    out.append(time.perf_counter() - t0)
    assert started == [], started
print(" ".join(str(x) for x in out))
"""


def _drains(installs: dict[str, _install.Install], n: int, runs: int) -> None:
    """The drain figures (see the module's docstring) of each install, interleaved."""
    import psutil

    from zapcli import ids
    from zapcli.lifecycle import queue
    from zapcli.lifecycle import session as sessions
    from zapcli.trail import store

    inst0 = installs[""]
    home = inst0.new_home("drain")
    os.environ["ZAPCLI_HOME"] = str(home)
    session = f"{SESSION}-drain"
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(8)]
    try:
        def trail(task: str, *, queued: bool = True) -> str:
            """A subagent's trail and markers, as `spawn` leaves them (queued: not started yet)."""
            sid = ids.new_id()
            fields = {"session": session, "cli": "sh", "task": task, "cwd": str(inst0.scratch),
                      "workspace": str(inst0.scratch), "timeout_s": 600.0, "after": [],
                      "executor": "local", "max_concurrent": 8}
            sessions.add(session, sid, queued=queue.marker(fields) if queued else None)
            store.create_trail(sid, fields, [])
            return sid

        for p in sleepers:
            sid = trail("sleep 600", queued=False)
            store.append(store.path_for(sid), "process", {
                "pid": p.pid, "create_time": psutil.Process(p.pid).create_time()}, sync=False)
        for i in range(n):
            trail(f"true {i}")
        samples = {f"{label}{what}": [] for label in installs
                   for what in ("spawn_cli", "drain_cold", "drain_warm")}
        for _ in range(runs):
            for label, inst in installs.items():
                env = inst.env(home, session=session)
                t, proc = inst.timed(inst.zapcli("spawn", "--cli", "sh", "--", "true"), env)
                samples[f"{label}spawn_cli"].append(t)
                proc = inst.run([inst.python, "-c", _DRAIN, "5"], env)
                took = [float(x) for x in proc.stdout.decode().split()]
                samples[f"{label}drain_cold"].append(took[0])
                samples[f"{label}drain_warm"] += took[1:]
        refs = [inst0.timed(inst0.ref_pass, inst0.env(home))[0] for _ in range(10)]
        ref = _install.median_ms(refs)
        print(f"drain_python_pass_median_ms {ref:.1f}")
        for key, vals in samples.items():
            ms = _install.median_ms(vals)
            note = {"spawn_cli": f"a `spawn` queued behind {n}+ (cap full): a new process, cold",
                    "drain_cold": "a process's first drain", "drain_warm": "its next ones, "
                    "nothing changed"}["_".join(key.split("_")[-2:])]
            print(f"{key}_q{n}_median_ms {ms:.1f}  ratio_vs_python_pass "
                  f"{_install.fmt_ratio(ms, ref)}  ({note}; {len(vals)} samples)", flush=True)
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
        shutil.rmtree(home, ignore_errors=True)


def _print(label: str, figs: list[dict[str, float]], ref: float, opts: argparse.Namespace) -> None:
    n = opts.count
    wall = statistics.median(f["wall"] for f in figs)
    cpu = statistics.median(f["cpu"] for f in figs)
    per = wall / n * 1000
    lost = sum(int(f["lost"]) for f in figs)
    print(f"{label}run_fleet{n}_wall_s {wall:.1f}  ({len(figs)} round(s); {n} x sh `true` spawned "
          f"by the run's model, {opts.batch} calls a turn, default cap)")
    print(f"{label}run_fleet{n}_per_subagent_ms {per:.1f}  ratio_vs_python_pass "
          f"{_install.fmt_ratio(per, ref)}")
    print(f"{label}run_fleet{n}_lost {lost}  (expected 0: every spawn's trail ends completed)")
    print(f"{label}run_fleet{n}_run_cpu_s {cpu:.1f}  per_subagent_ms {cpu / n * 1000:.1f}  "
          f"(the `zapcli run` process: user + system)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
