"""The fan-out of tests/bench/bench_fanout.py, A/B: this tree against a commit.

Usage: .venv/bin/python tests/bench/bench_fanout_ab.py [--against main] [--rounds 3] [--fanout 50]

`--fanout` × `spawn --cli sh -- true`, one after another, then one `wait` for
all of them, per subagent (goal <= 4x `python -I -c pass`), for a compiled
copy of this tree and one of commit `--against` (`git archive`), round by
round in the same run (which goes first alternates), each against the
reference measured in its own rounds: the machine is shared, so the load hits
both alike. Prints the load average at the start and the end. The RSS A/B is
`bench_fanout.py --memory-only --against REF`.
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

SESSION = "bench-fanout-ab"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", default="main", metavar="REF")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fanout", type=int, default=50)
    opts = ap.parse_args()
    installs = {"": _install.build(), f"{opts.against}: ": _install.build(
        "zapcli-bench-before-", ref=opts.against)}
    try:
        installs[""].use_in_process()
        import _fixtures

        print(f"load_average_start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        per: dict[str, list[float]] = {k: [] for k in installs}
        refs: dict[str, list[float]] = {k: [] for k in installs}
        order = list(installs.items())
        for r in range(opts.rounds + 1):
            for label, inst in order if r % 2 == 0 else order[::-1]:
                took, ref = _round(inst, _fixtures, opts.fanout, r)
                refs[label] += ref
                if r:  # the first round warms the caches
                    per[label].append(took / opts.fanout)
        for label in installs:
            ref = _install.median_ms(refs[label])
            ms = statistics.median(per[label]) * 1000
            print(f"{label}fanout{opts.fanout}_per_subagent_median_ms {ms:.1f}  ratio_vs_python_pass "
                  f"{_install.fmt_ratio(ms, ref)}  (goal <= 4x; {opts.fanout} x spawn --cli sh -- "
                  f"true then wait, {opts.rounds} rounds, python_pass {ref:.1f} ms in the same rounds)")
        print(f"load_average_end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    finally:
        for inst in installs.values():
            inst.cleanup()


def _round(inst: _install.Install, fx: object, n: int, r: int) -> tuple[float, list[float]]:
    """One fan-out: (its wall seconds, the references taken before and after)."""
    spawn_cmd = inst.zapcli("spawn", "--cli", "sh", "--", "true")
    home = inst.new_home("fan")
    env = inst.env(home, session=f"{SESSION}-{r}")
    refs = [inst.timed(inst.ref_pass, env)[0] for _ in range(5)]
    t0 = time.perf_counter()
    ids = [inst.run(spawn_cmd, env).stdout.decode().strip() for _ in range(n)]
    inst.run(inst.zapcli("wait", *ids), env, timeout=600)
    took = time.perf_counter() - t0
    refs += [inst.timed(inst.ref_pass, env)[0] for _ in range(5)]  # drift hits both
    for sid in ids:
        fx.wait_done(home, sid)  # type: ignore[attr-defined]  # every runner gone first
        status = next((rec.get("status") for rec in fx.trail_records(home, sid)  # type: ignore[attr-defined]
                       if rec.get("type") == "status"), None)
        if status != "completed":
            raise RuntimeError(f"{sid} ended {status}")
    shutil.rmtree(home, ignore_errors=True)
    return took, refs


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
