"""Settling children into the ledger from one long-lived process, as a
`zapcli run` (or `mcp serve`) does for every child it spawned.

Usage: .venv/bin/python tests/bench/bench_ledger.py [--settles 300] [--rounds 5] [--against REF]

From a compiled copy of the package (`_install.build()`): a fresh process
settles `--settles` children (`ledger.settle`) into a new state folder and
prints the wall time and the CPU time per settlement, median of `--rounds`.
`--against REF` does the same with the repository's commit REF, in the same
rounds (an A/B in one run).
"""

from __future__ import annotations

import argparse
import statistics
import sys

import _install

SETTLE = r"""
import sys, time
from zapcli import ledger
t = ledger.Tokens(10, 5)
ledger.settle("warm", "s", "completed", t)
n = int(sys.argv[1])
t0, c0 = time.perf_counter(), time.process_time()
for i in range(n):
    ledger.settle(f"sa_{i}", "s", "completed", t)
print((time.perf_counter() - t0) / n * 1e3, (time.process_time() - c0) / n * 1e3)
"""


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settles", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--against", metavar="REF")
    opts = ap.parse_args()
    with _install.builds(opts.against) as installs:
        figures: dict[str, list[tuple[float, float]]] = {label: [] for label in installs}
        for _ in range(opts.rounds):
            for label, inst in installs.items():
                home = inst.new_home("ledger")
                out = inst.run([inst.python, "-c", SETTLE, str(opts.settles)], inst.env(home)).stdout
                wall, cpu = map(float, out.split())
                figures[label].append((wall, cpu))
    for label, got in figures.items():
        wall = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(f"{label}settle_per_child_ms {wall:.3f}  cpu_ms {cpu:.3f}  "
              f"({opts.settles} settlements in one process, {opts.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
