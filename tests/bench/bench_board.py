"""The task board (#22): `board claim` against `python -I -c pass`, and 20
concurrent claimers over 200 tasks.

Usage: .venv/bin/python tests/bench/bench_board.py [--runs 30] [--claimers 20] [--tasks 200]

Runs every command from a compiled, non-editable copy of the package
(`_install.build()`), stdout piped, state in temp folders. `board claim`
(the whole command, as a worker runs it in a loop) is timed interleaved
with the reference, each round on a board with open tasks left. Then
`--claimers` shell loops (`while t=$(zapcli board claim); do ...; done`)
start at once on a fresh board of `--tasks` tasks: every id claimed is
counted, a task claimed twice is a failure.

Prints one figure per line: the claim median in ms with its ratio to the
`python -I -c pass` median of the same run (goal <= 4x); the claimers'
double claims (goal 0) and throughput in claims/s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter

import _install

SESSION = "bench-board"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--claimers", type=int, default=20)
    ap.add_argument("--tasks", type=int, default=200)
    opts = ap.parse_args()
    inst = _install.build()
    try:
        return _bench(inst, opts.runs, opts.claimers, opts.tasks)
    finally:
        inst.cleanup()


def _fill(inst: _install.Install, env: dict[str, str], n: int) -> None:
    for i in range(n):
        inst.run(inst.zapcli("board", "add", f"bench task {i}"), env)


def _bench(inst: _install.Install, runs: int, claimers: int, tasks: int) -> int:
    home = inst.new_home("claim")
    env = inst.env(home, session=SESSION)
    _fill(inst, env, runs + 4)  # one per claim timed (and the warm-up), never none left
    env_ref = inst.env(inst.new_home("ref"), session=SESSION)
    samples = _install.interleaved(runs, {
        "python_pass": lambda: inst.timed(inst.ref_pass, env_ref)[0],
        "board_claim": lambda: inst.timed(inst.zapcli("board", "claim"), env)[0],
    })
    ref = _install.median_ms(samples["python_pass"])
    med = _install.median_ms(samples["board_claim"])
    print(f"python_pass_median_ms {ref:.1f}  (reference: bench venv python -I -c pass, {runs} runs)")
    print(f"board_claim_median_ms {med:.1f}  ratio_vs_python_pass {_install.fmt_ratio(med, ref)}"
          "  (goal <= 4x)")

    crowd = inst.env(inst.new_home("crowd"), session=SESSION)
    _fill(inst, crowd, tasks)
    claim = " ".join(inst.zapcli("board", "claim"))
    loop = f'while t=$({claim} 2>/dev/null); do echo "$t"; done'
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["sh", "-c", loop], env=crowd, stdout=subprocess.PIPE)
             for _ in range(claimers)]
    got: list[str] = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        got += out.decode().split()
    took = time.perf_counter() - t0
    twice = sum(c - 1 for c in Counter(got).values() if c > 1)
    missed = tasks - len(set(got))
    print(f"board_double_claims {twice}  ({claimers} claimers, {tasks} tasks, {missed} unclaimed; "
          "goal 0 double claims, 0 unclaimed)")
    print(f"board_claims_per_s {len(got) / took:.1f}  ({len(got)} claims by {claimers} claimers "
          f"in {took:.1f}s, each a whole command)")
    return 1 if twice or missed else 0


if __name__ == "__main__":
    sys.exit(main())
