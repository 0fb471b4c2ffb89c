"""Run every benchmark in sequence (`make bench`). Never run in CI.

Usage: .venv/bin/python tests/bench/run_all.py [NAME...]   e.g. `run_all.py cli crash`

Each bench is a separate process (so one's imports and threads cannot skew
another's figures); its figures are printed under a `== bench_X ==` header.
Exits 1 if any benchmark failed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = ["bench_cli", "bench_trail", "bench_crash", "bench_wait_cpu", "bench_agent_loop", "bench_agent_startup",
           "bench_ray"]


def main(argv: list[str]) -> int:
    wanted = [b for b in BENCHES if not argv or any(b == a or b == f"bench_{a}" for a in argv)]
    if argv and not wanted:
        print(f"no such benchmark: {' '.join(argv)}; choose from {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    failed = []
    start = time.monotonic()
    for name in wanted:
        print(f"== {name} ==", flush=True)
        t0 = time.monotonic()
        code = subprocess.call([sys.executable, str(HERE / f"{name}.py")], cwd=HERE.parents[1])
        print(f"# {name} took {time.monotonic() - t0:.0f}s{'' if code == 0 else f', FAILED (exit {code})'}",
              flush=True)
        if code != 0:
            failed.append(name)
    print(f"# all benchmarks took {time.monotonic() - start:.0f}s", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
