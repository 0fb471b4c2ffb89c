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
BENCHES = ["bench_cli", "bench_trail", "bench_crash", "bench_wait_cpu", "bench_reads", "bench_agent_loop",
           "bench_agent_startup", "bench_worktree", "bench_mcp", "bench_sandbox", "bench_ray",
           "bench_telemetry", "bench_budget", "bench_board", "bench_cli_sandbox",
           "bench_file_tools", "bench_placeholders", "bench_trust"]


def main(argv: list[str]) -> int:
    wanted = [b for b in BENCHES if not argv or any(b == a or b == f"bench_{a}" for a in argv)]
    if argv and not wanted:
        print(f"no such benchmark: {' '.join(argv)}; choose from {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    failed = []
    figures: dict[str, str] = {}
    start = time.monotonic()
    for name in wanted:
        print(f"== {name} ==", flush=True)
        t0 = time.monotonic()
        code = _run(name, figures)
        print(f"# {name} took {time.monotonic() - t0:.0f}s{'' if code == 0 else f', FAILED (exit {code})'}",
              flush=True)
        if code != 0:
            failed.append(name)
    print(f"# all benchmarks took {time.monotonic() - start:.0f}s", flush=True)
    _goals(figures)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


# The figures issues #12, #18, #20 and #22 set goals for: (name, line key, how to read it, goal, met?)
GOALS = [
    ("spawn", "spawn_median_ms", "ratio_vs_python_pass", "<= 3x python -I -c pass", lambda v: v <= 3),
    ("poll --no-wait", "poll_no_wait_median_ms", "ratio_vs_python_pass", "<= 3x", lambda v: v <= 3),
    ("list at 1,000", "list_1000_median_ms", "ratio_vs_python_pass", "<= 4x", lambda v: v <= 4),
    ("trail end to end", "end_to_end_records_per_s", "", ">= 300,000 records/s", lambda v: v >= 300_000),
    ("launch -> first model request", "agent_first_request_median_ms", "", "<= 250 ms",
     lambda v: v <= 250),
    ("bash `true` in the sandbox (#18)", "bash_true_sandboxed_median_ms", "ratio",
     "<= 1.3x unsandboxed", lambda v: v <= 1.3),
    ("board claim (#22)", "board_claim_median_ms", "ratio_vs_python_pass", "<= 4x", lambda v: v <= 4),
    ("board double claims (#22)", "board_double_claims", "", "0", lambda v: v == 0),
    ("ray: 50 x sleep 1 at 16 vs local (#20)", "ray_fanout_ratio", "", "<= 1.5x", lambda v: v <= 1.5),
    ("ray: a node's line to poll (#20)", "ray_node_line_to_poll_median_ms", "", "<= 1000 ms",
     lambda v: v <= 1000),
    ("read 10 KB beneath its root (#27)", "file_read_10kb_us", "ratio", "<= 1.2x plain open()",
     lambda v: v <= 1.2),
    ("write beneath its root (#27)", "file_write_10kb_us", "ratio", "<= 1.2x plain open()",
     lambda v: v <= 1.2),
]


def _run(name: str, figures: dict[str, str]) -> int:
    """One bench in its own process; its lines are echoed and kept by key."""
    proc = subprocess.Popen([sys.executable, str(HERE / f"{name}.py")], cwd=HERE.parents[1],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
        key, _, rest = line.partition(" ")
        figures[key] = rest
    return proc.wait()


def _goals(figures: dict[str, str]) -> None:
    """The figures with their goals, at the end of `make bench`."""
    print("== goals (issues #12, #18, #20, #22, #27) ==")
    for label, key, ratio_key, goal, met in GOALS:
        rest = figures.get(key)
        if rest is None:
            print(f"{label:<32} not measured (run the bench that prints {key})")
            continue
        words = rest.split()
        try:
            if ratio_key:
                value = float(words[words.index(ratio_key) + 1].rstrip("x"))
                shown = f"{value:.1f}x ({words[0]} {'us' if key.endswith('_us') else 'ms'})"
            else:
                value = float(words[0].replace(",", "").rstrip("x"))
                shown = words[0] + (" ms" if key.endswith("_ms") else "")
        except (ValueError, IndexError):
            print(f"{label:<32} unreadable: {rest.strip()}")
            continue
        print(f"{label:<32} {shown:<22} goal {goal:<26} {'met' if met(value) else 'NOT MET'}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
