"""The sandbox's cost per bash call, and the key guard's cost per command (docs/explanation/rules.md#sandbox).

Usage: .venv/bin/python tests/bench/bench_sandbox.py [--calls 200] [--runs 15]

1. Per bash call: the built-in agent's `bash` tool (`BashTool.run`, real
   processes) running `true`, in the sandbox (one long-lived bubblewrap per
   toolset, warm: its helper forks each command) and the same call without
   it, round by round so drift hits both alike. Goal: sandboxed <= 1.3x.
   Also, informational: the first call of a toolset (it starts the sandbox),
   and a fresh `bwrap ... bash -c true` per call (the design not taken).
2. Per command: `zapcli poll ID` (a long-lived command: it seals itself) with
   a key in its environment and without, through the compiled copy
   (`_install.build()`), beside `python -I -c pass`. The seal is one prctl
   and a rewrite of the environment block in place: no second interpreter.

Prints medians with their ratios. Taken on a shared machine: figures vary
with its load; the ratios, measured in the same run, are what to read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _install


def _bash_calls(calls: int) -> int:
    from zapcli.agent.types import ToolContext
    from zapcli.sandbox import bwrap
    from zapcli.sandbox.policy import resolve
    from zapcli.sandbox.session import Sandbox
    from zapcli.tools.env import scrubbed_env
    from zapcli.tools.procs import JobRegistry
    from zapcli.tools.shell import BashTool

    found = bwrap.probe()
    if not found.ok:
        print(f"# no sandbox here: {found.sentence()}", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    (tmp / "ws").mkdir()
    (tmp / "scratch").mkdir()
    policy, _ = resolve("workspace", workspace=str(tmp / "ws"), scratch=str(tmp / "scratch"))
    env = scrubbed_env(os.environ)
    jobs = JobRegistry()
    bash = BashTool(jobs)
    plain = ToolContext(workspace=str(tmp / "ws"), cwd=str(tmp / "ws"), env=env)
    box = Sandbox(policy, found.program)
    boxed = ToolContext(workspace=str(tmp / "ws"), cwd=str(tmp / "ws"), env=env, sandbox=box)

    def one(ctx: ToolContext) -> float:
        t0 = time.perf_counter()
        res = bash.run({"command": "true"}, ctx)
        took = time.perf_counter() - t0
        assert res.ok, res.content
        return took

    firsts = []
    for _ in range(5):  # a toolset's first call starts its sandbox
        fresh = Sandbox(policy, found.program)
        firsts.append(one(ToolContext(workspace=str(tmp / "ws"), cwd=str(tmp / "ws"), env=env,
                                      sandbox=fresh)))
        fresh.close()
    one(boxed)
    one(plain)
    outside, inside, per_bwrap = [], [], []
    fresh_argv = [*bwrap.argv(policy, found.program), "/bin/bash", "-c", "true"]
    for i in range(calls):
        outside.append(one(plain))
        inside.append(one(boxed))
        if i % 4 == 0:
            t0 = time.perf_counter()
            subprocess.run(fresh_argv, stdin=subprocess.DEVNULL, check=True)
            per_bwrap.append(time.perf_counter() - t0)
    box.close()
    jobs.close()
    med_out, med_in = statistics.median(outside) * 1e3, statistics.median(inside) * 1e3
    ratio = med_in / med_out
    print(f"bash_true_sandboxed_median_ms {med_in:.2f}  unsandboxed {med_out:.2f}  "
          f"ratio {ratio:.2f}x  goal <= 1.3x {'met' if ratio <= 1.3 else 'NOT MET'}")
    print(f"bash_first_call_sandbox_start_median_ms {statistics.median(firsts) * 1e3:.1f}  "
          "(info: once per toolset)")
    print(f"bwrap_per_call_median_ms {statistics.median(per_bwrap) * 1e3:.2f}  ratio "
          f"{statistics.median(per_bwrap) * 1e3 / med_out:.2f}x  (info: a new bwrap per call, "
          "the design not taken)")
    return 0


def _seal(runs: int) -> int:
    inst = _install.build()
    try:
        home = inst.new_home("seal")
        plain = inst.env(home, session="bench-seal")
        keyed = inst.env(home, session="bench-seal", extra={"OPENAI_API_KEY": "sk-" + "x" * 40,
                                                               "MY_TOKEN": "t" * 30})
        argv = inst.zapcli("poll", "0badc0de")  # unknown id: answers at once, yet seals
        short = inst.zapcli("poll", "--no-wait", "0badc0de")  # the same answer, unsealed (lifespan)
        rows: dict[str, list[float]] = {"pass": [], "plain": [], "keyed": [], "short": []}
        for _ in range(runs):
            rows["pass"].append(inst.timed(inst.ref_pass, plain)[0])
            rows["plain"].append(inst.timed(argv, plain, check=False)[0])
            rows["keyed"].append(inst.timed(argv, keyed, check=False)[0])
            rows["short"].append(inst.timed(short, keyed, check=False)[0])
        med = {k: statistics.median(v) * 1e3 for k, v in rows.items()}
        print(f"poll_sealed_with_keys_median_ms {med['keyed']:.1f}  without keys {med['plain']:.1f}  "
              f"ratio {med['keyed'] / med['plain']:.2f}x  python_pass {med['pass']:.1f}  "
              f"ratio_vs_python_pass {med['keyed'] / med['pass']:.1f}x")
        print(f"seal_cost_ms {med['keyed'] - med['short']:.1f}  (poll sealed {med['keyed']:.1f} vs "
              f"poll --no-wait unsealed {med['short']:.1f}, ratio {med['keyed'] / med['short']:.2f}x)")
    finally:
        inst.cleanup()
    return 0


def main() -> int:
    _install.ensure_venv()
    sys.path.insert(0, str(_install.REPO))
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    code = _bash_calls(args.calls)
    return code or _seal(args.runs)


if __name__ == "__main__":
    raise SystemExit(main())
