"""An agent CLI in zapcli's sandbox (issue 27 item 10): what the sandbox adds
to a CLI subagent's start.

Usage: .venv/bin/python tests/bench/bench_cli_sandbox.py [--reps 7]

1. `zapcli spawn --cli claude` until its first event in the trail (the text of
   its first answer; the scripted Anthropic server answers at once), the
   whole CLI sandboxed (the default) against `--no-sandbox`, interleaved in
   the same run. Also the whole run (`spawn` + `wait`) each way.
2. What the sandbox itself costs: bubblewrap with the CLI's policy (the user's
   home hidden, /tmp its own, the private home bound) starting `true`,
   against `true` alone.
zapcli runs from a byte-compiled copy (`_install.build`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _install

_install.ensure_venv()
REPO = _install.REPO
BIN = REPO / ".cache" / "agent-clis" / "node_modules" / ".bin"
sys.path.insert(0, str(REPO))
FIRST = "BENCH-FIRST-EVENT"


def start_server(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    script = tmp / "claude.json"
    script.write_text(json.dumps([{"match": FIRST, "turns": [{"text": "First words."}]}]))
    proc = subprocess.Popen([_install.venv_python(), "-m", "zapcli.testing.scripted_server",
                             "--protocol", "anthropic", "--script", str(script)],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[-1]


def first_event(path: Path, deadline: float) -> None:
    """Until the trail holds the CLI's first text."""
    while time.perf_counter() < deadline:
        try:
            if b'"type": "text"' in path.read_bytes() or b'"type":"text"' in path.read_bytes():
                return
        except OSError:
            pass
        time.sleep(0.002)
    raise RuntimeError(f"no text in {path} in time")


def one(inst: _install.Install, env: dict[str, str], home: Path, sandboxed: bool, n: int,
        whole: dict[str, list[float]]) -> float:
    flags = [] if sandboxed else ["--no-sandbox"]
    t0 = time.perf_counter()
    sid = subprocess.run(inst.zapcli("spawn", "--cli", "claude", "--approval", "full", *flags,
                                     "--", f"{FIRST} {n}"), env=env, cwd=inst.scratch,
                         capture_output=True, text=True, check=True).stdout.strip()
    first_event(home / "subagents" / f"{sid}.jsonl", t0 + 120)
    took = time.perf_counter() - t0
    done = subprocess.run(inst.zapcli("wait", sid, "--timeout", "120"), env=env,
                          cwd=inst.scratch, capture_output=True, text=True)
    whole["sandboxed" if sandboxed else "unsandboxed"].append(time.perf_counter() - t0)
    assert done.returncode == 0, done.stdout + done.stderr
    diag = (home / "subagents" / f"{sid}.jsonl").read_text()
    assert ("inside zapcli's sandbox" in diag) == sandboxed, diag[-3000:]
    return took


def startup(reps: int) -> None:
    if not (BIN / "claude").exists():
        print("claude_first_event skipped: run `make agent-clis`")
        return
    inst = _install.build()
    server, url = start_server(inst.root)
    try:
        home = inst.new_home()
        (inst.root / "config" / "config.yaml").write_text(
            f"backends:\n  claude:\n    command: {BIN / 'claude'}\n")
        env = inst.env(home, extra={"ANTHROPIC_BASE_URL": url,
                                    "ANTHROPIC_API_KEY": "sk-ant-bench-0123456789"})
        counter = iter(range(10_000))
        whole: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
        runs = _install.interleaved(reps, {
            "unsandboxed": lambda: one(inst, env, home, False, next(counter), whole),
            "sandboxed": lambda: one(inst, env, home, True, next(counter), whole)}, warmup=1)
        b, s = _install.median_ms(runs["unsandboxed"]), _install.median_ms(runs["sandboxed"])
        wb = _install.median_ms(whole["unsandboxed"][1:])
        ws = _install.median_ms(whole["sandboxed"][1:])
        print(f"claude_first_event_sandboxed_median_ms {s:.0f}  unsandboxed_ms {b:.0f}  ratio "
              f"{s / b:.2f}x  added_ms {s - b:.0f}  samples sandboxed "
              f"{[round(x * 1000) for x in runs['sandboxed']]} unsandboxed "
              f"{[round(x * 1000) for x in runs['unsandboxed']]}")
        print(f"claude_spawn_to_done_sandboxed_median_ms {ws:.0f}  unsandboxed_ms {wb:.0f}  "
              f"ratio {ws / wb:.2f}x")
    finally:
        server.terminate()
        server.wait()
        inst.cleanup()


def bare_bwrap(reps: int) -> None:
    """bubblewrap with a CLI's policy, starting `true`, against `true`."""
    import tempfile

    from zapcli.sandbox import bwrap, resolve
    from zapcli.sandbox.whole import whole

    found = bwrap.probe()
    if not found.ok:
        print(f"bwrap_whole_true skipped: {found.sentence()}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        ws, home, scratch = (Path(tmp) / d for d in ("ws", "home", "scratch"))
        for d in (ws, home, scratch):
            d.mkdir()
        base, _ = resolve("workspace", workspace=str(ws), scratch=str(scratch), network=True)
        policy, _ = whole(base, home=str(home), hide=[os.path.expanduser("~")],
                          show=[os.path.realpath(sys.base_prefix)])
        boxed = [*bwrap.argv(policy, found.program), "/bin/true"]

        def timed(argv: list[str]) -> float:
            t0 = time.perf_counter()
            subprocess.run(argv, check=True)
            return time.perf_counter() - t0

        runs = _install.interleaved(reps * 5, {"true": lambda: timed(["/bin/true"]),
                                               "bwrap": lambda: timed(boxed)})
        t, w = _install.median_ms(runs["true"]), _install.median_ms(runs["bwrap"])
        print(f"bwrap_whole_program_true_median_ms {w:.1f}  bare_true_ms {t:.1f}  added_ms "
              f"{w - t:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    bare_bwrap(args.reps)
    startup(args.reps)


if __name__ == "__main__":
    main()
