"""A fan-out in a state folder that keeps many finished subagents and a run's
trail: what each subagent's end costs (retention runs at every runner's end
while nothing else runs), against `python -I -c pass`.

Usage: .venv/bin/python tests/bench/bench_kept.py [--kept 1000] [--fanout 20] [--rounds 3]
                                                 [--against REF]

From a compiled copy of the package (`_install.build()`). The state folder
holds `--kept` finished `sh` subagents (`_fixtures.make_finished`) and the
trail of a `zapcli run` that ended, whose model spawned two `sh` subagents
that are kept too (a scripted model on 127.0.0.1); `max_kept` is above what
it holds, so nothing is deleted. Each round copies it afresh and runs
`--fanout` × (`spawn --cli sh -- true`, then `wait` for it): one after
another, so each runner ends with nothing else running and collects; the
figure is the wall time per subagent. `--against REF` runs the same rounds
with the repository's commit REF (an A/B in one run, interleaved).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import _install

SESSION = "bench-kept"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kept", type=int, default=1000)
    ap.add_argument("--fanout", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", metavar="REF")
    opts = ap.parse_args()
    with _install.builds(opts.against) as installs:
        return _bench(installs, opts)


def _seed(inst: _install.Install, kept: int) -> Path:
    """The state folder every round starts from."""
    from zapcli.testing import ScriptedServer

    home = inst.new_home("kept")
    inst.use_in_process(home, SESSION)
    import _fixtures

    t0 = time.perf_counter()
    _fixtures.make_finished(SESSION, kept, cwd=str(inst.scratch))
    spawn = [{"name": "subagent", "arguments": {"action": "spawn", "task": f"echo {i}", "cli": "sh"}}
             for i in range(2)]
    script = [{"turns": [{"tool_calls": spawn},
                         {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 30}}]},
                         {"text": "done."}]}]
    with ScriptedServer(script) as srv:
        env = inst.env(home, session=None, extra={"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "x",
                                                  "ZAPCLI_MODEL": "scripted", "ZAPCLI_MAX_KEPT": str(kept * 10)})
        inst.run(inst.zapcli("run", "--approval", "full", "--", "fan out"), env, timeout=120)
    time.sleep(1)  # its subagents' runners end
    if not any((home / "runs").glob("run_*.jsonl")):
        raise RuntimeError("the run left no trail")
    print(f"# seeded {kept} finished subagents and an ended run in {time.perf_counter() - t0:.1f}s",
          file=sys.stderr)
    return home


def _bench(installs: dict[str, _install.Install], opts: argparse.Namespace) -> int:
    import _fixtures

    first = next(iter(installs.values()))
    seed = _seed(first, opts.kept)
    print(f"load_average_start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    per: dict[str, list[float]] = {label: [] for label in installs}
    refs: list[float] = []
    for r in range(opts.rounds + 1):
        for label, inst in installs.items():
            home = Path(str(seed) + f"-{r}-{label or 'this'}")
            shutil.copytree(seed, home, symlinks=True)
            env = inst.env(home, session=SESSION, extra={"ZAPCLI_MAX_KEPT": str(opts.kept * 10),
                                                         "ZAPCLI_CONFIG_HOME": str(first.root / "config")})
            refs += [inst.timed(inst.ref_pass, env)[0] for _ in range(3)]
            t0 = time.perf_counter()
            for _ in range(opts.fanout):
                sid = inst.run(inst.zapcli("spawn", "--cli", "sh", "--", "true"), env).stdout.decode().strip()
                inst.run(inst.zapcli("wait", sid), env)
                if _fixtures.wait_done(home, sid) != "completed":
                    raise RuntimeError(f"{sid} did not complete")
            took = time.perf_counter() - t0
            if r:  # the first round warms the caches
                per[label].append(took / opts.fanout)
            shutil.rmtree(home, ignore_errors=True)
    ref = _install.median_ms(refs)
    print(f"python_pass_median_ms {ref:.1f}")
    for label, vals in per.items():
        ms = statistics.median(vals) * 1000
        print(f"{label}kept{opts.kept}_spawn_wait_per_subagent_ms {ms:.1f}  ratio_vs_python_pass "
              f"{_install.fmt_ratio(ms, ref)}  ({opts.fanout} x spawn then wait, {opts.rounds} rounds, "
              f"{opts.kept} kept and an ended run's trail)")
    print(f"load_average_end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
