"""What holding the control files costs a sandbox's start, before and after
placeholder files (file-kind names held by a file that configures nothing,
and git's exclude file covered), paired in one run.

Usage: .venv/bin/python tests/bench/bench_placeholders.py [--reps 15] [--base REF]

Two compiled copies of zapcli: this tree's, and REF's (default: where this
branch left main, `git merge-base HEAD main`), taken with `git archive`.

1. Round trip: `zapcli spawn --cli sh --sandbox -- true` and `zapcli wait`
   on it, in a git repository (its control names missing: every one is
   held), base and this tree interleaved; `--cli sh -- true` unsandboxed
   (this tree) beside them as the reference.
2. `placeholders.hold` + `release` alone, in-process, for the same
   workspace and the whole control list (each copy in its own process).

Prints medians and ratios; the ratios, measured in the same run, are what
to read on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _install

HOLD = r"""
import os, sys, tempfile, time, statistics, subprocess
from zapcli.backends.registry import control_files
from zapcli.sandbox import placeholders
from zapcli.sandbox.policy import resolve
tmp = tempfile.mkdtemp(prefix="bench-hold-")
ws, scratch, records = (os.path.join(tmp, n) for n in ("ws", "scratch", "records"))
os.mkdir(ws); os.mkdir(scratch)
subprocess.run(["git", "init", "-q", ws], check=True)
names = control_files()
took = []
for i in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    policy, _ = resolve("workspace", workspace=ws, scratch=scratch, control=names)
    held = placeholders.hold(policy, records)
    held.release()
    took.append(time.perf_counter() - t0)
assert sorted(os.listdir(ws)) == [".git"], os.listdir(ws)
print(statistics.median(took[3:]) * 1e6)
"""


def _base_tree(ref: str) -> Path:
    if not ref:
        ref = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=_install.REPO,
                             capture_output=True, text=True, check=True).stdout.strip()
    out = Path(tempfile.mkdtemp(prefix="zapcli-bench-base-"))
    archive = subprocess.run(["git", "archive", ref, "zapcli"], cwd=_install.REPO,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    print(f"# base: {ref[:12]}")
    return out


def _repo(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def main() -> int:
    _install.ensure_venv()
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--base", default="")
    args = parser.parse_args()
    copies = {"base": _install.build("zapcli-bench-a-", _base_tree(args.base)),
              "this": _install.build("zapcli-bench-b-")}
    try:
        envs = {k: inst.env(inst.new_home(k)) for k, inst in copies.items()}
        spaces = {k: _repo(inst.root) for k, inst in copies.items()}

        def trip(name: str, *flags: str) -> float:
            inst = copies[name]
            t0 = time.perf_counter()
            sid = subprocess.run(inst.zapcli("spawn", "--cli", "sh", *flags, "--", "true"),
                                 env=envs[name], cwd=spaces[name], capture_output=True,
                                 text=True, check=True).stdout.strip()
            done = subprocess.run(inst.zapcli("wait", sid, "--timeout", "60"), env=envs[name],
                                  cwd=spaces[name], capture_output=True, text=True)
            took = time.perf_counter() - t0
            if done.returncode != 0:
                raise RuntimeError(f"{name}: {sid} did not complete: {done.stdout}{done.stderr}")
            return took

        rows = _install.interleaved(args.reps, {
            "base_sandboxed": lambda: trip("base", "--sandbox"),
            "this_sandboxed": lambda: trip("this", "--sandbox"),
            "this_unsandboxed": lambda: trip("this")})
        for name, ws in spaces.items():
            left = sorted(p.name for p in ws.iterdir())
            assert left == [".git"], f"{name} left {left} in the workspace"
        med = {k: _install.median_ms(v) for k, v in rows.items()}
        print(f"sh_sandbox_true_roundtrip_median_ms this {med['this_sandboxed']:.1f}  "
              f"base {med['base_sandboxed']:.1f}  ratio "
              f"{med['this_sandboxed'] / med['base_sandboxed']:.3f}x  "
              f"(unsandboxed {med['this_unsandboxed']:.1f}; sandbox adds "
              f"{med['this_sandboxed'] - med['this_unsandboxed']:.1f} this, "
              f"{med['base_sandboxed'] - med['this_unsandboxed']:.1f} base)")
        holds: dict[str, list[float]] = {"base": [], "this": []}
        for _ in range(5):
            for name, inst in copies.items():
                got = inst.run([inst.python, "-c", HOLD, "40"], inst.env())
                holds[name].append(float(got.stdout.decode().split()[-1]))
        hb, ht = statistics.median(holds["base"]), statistics.median(holds["this"])
        print(f"hold_release_median_us this {ht:.0f}  base {hb:.0f}  ratio {ht / hb:.2f}x  "
              f"(resolve + hold + release, whole control list, a git repository)")
    finally:
        for inst in copies.values():
            inst.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
