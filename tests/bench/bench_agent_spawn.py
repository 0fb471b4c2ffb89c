"""`zapcli spawn TASK` for the built-in agent (no `--cli`), against `python -I -c pass`.

Usage: .venv/bin/python tests/bench/bench_agent_spawn.py [--runs 15] [--against REF]

What a caller waits for when it spawns a built-in agent: the definition
resolved and checked, the grant built, the model's endpoint, trust, the
budget, the trail written and the runner launched; not the child's work.
Serves a scripted OpenAI-compatible model in this process (ScriptedServer on
127.0.0.1, real HTTP; a looping rule answers every conversation with one
short text turn) so each child completes after one request. Runs every
command from a compiled, non-editable copy of the package
(`_install.build()`), stdout piped, state in temp folders, a workspace (the
scratch folder) holding no definitions.

Rounds interleave, in turn: the reference `python -I -c pass`; `spawn --cli
sh -- true` (the shell's spawn, for scale); `spawn TASK` into a home used by
every round (a user's next spawn: the state folder's caches as the previous
spawn left them); `spawn TASK` into a fresh home (a machine's first spawn);
with `--against`, each right after its own.
After each spawn the bench waits (untimed) until that subagent has ended and
its supervisor has exited, so its child never competes with the next
measurement. `--against REF` also times the same spawns as the repository's
commit REF has them, in the same rounds (an A/B in one run; those lines are
marked `@REF`).

Prints one figure per line: the median in ms and the ratio to the
`python -I -c pass` median of the same run, with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable
from typing import Any

import _install

SESSION = "bench-agent-spawn"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--against", default="", metavar="REF",
                    help="also time the spawns as this commit has them (e.g. main)")
    opts = ap.parse_args()

    inst = _install.build()
    before = _install.build("zapcli-bench-before-", ref=opts.against) if opts.against else None
    try:
        inst.use_in_process()
        from zapcli.testing import ScriptedServer

        with ScriptedServer([{"loop": True, "turns": [{"text": "done.", "usage": {
                "prompt_tokens": 200, "completion_tokens": 2}}]}]) as srv:
            return _bench(inst, srv, opts.runs, before, opts.against)
    finally:
        inst.cleanup()
        if before is not None:
            before.cleanup()


def _bench(inst: _install.Install, srv: Any, runs: int, before: _install.Install | None,
           ref_name: str) -> int:
    import _fixtures

    model = {"OPENAI_BASE_URL": srv.base_url, "ZAPCLI_MODEL": "scripted", "OPENAI_API_KEY": "x"}
    counter = iter(range(1_000_000))
    env_ref = inst.env(inst.new_home("ref"), session=SESSION)

    def spawner(install: _install.Install, tag: str, *, fresh: bool,
                argv: Callable[[], list[str]]) -> Callable[[], float]:
        steady = install.root / f"steady-{tag}"
        steady.mkdir(exist_ok=True)
        config = {"ZAPCLI_CONFIG_HOME": str(inst.root / "config")}  # both versions: one config

        def one() -> float:
            home = install.new_home(f"fresh-{tag}") if fresh else steady
            try:
                t, proc = install.timed(argv(), install.env(home, session=SESSION,
                                                             extra={**model, **config}))
                sid = proc.stdout.decode().strip()
                try:
                    status = _fixtures.wait_done(home, sid, timeout=60)
                except RuntimeError:
                    _fixtures.kill_subagent(home, sid)
                    raise
                if status != "completed":
                    err = home / "subagents" / f"{sid}.err"
                    detail = err.read_text(errors="replace")[-1500:] if err.exists() else ""
                    raise RuntimeError(f"{tag}: subagent {sid} ended {status}: {detail}")
                return t
            finally:
                if fresh:
                    shutil.rmtree(home, ignore_errors=True)
        return one

    def agent_argv(install: _install.Install) -> Callable[[], list[str]]:
        return lambda: install.zapcli("spawn", f"bench task {next(counter)}")

    def sh_argv(install: _install.Install) -> Callable[[], list[str]]:
        return lambda: install.zapcli("spawn", "--cli", "sh", "--", "true")

    mine = {
        "spawn_sh": spawner(inst, "sh", fresh=False, argv=sh_argv(inst)),
        "agent_spawn": spawner(inst, "agent", fresh=False, argv=agent_argv(inst)),
        "agent_spawn_fresh_home": spawner(inst, "agent", fresh=True, argv=agent_argv(inst)),
    }
    theirs = {} if before is None else {
        "spawn_sh": spawner(before, "sh", fresh=False, argv=sh_argv(before)),
        "agent_spawn": spawner(before, "agent", fresh=False, argv=agent_argv(before)),
        "agent_spawn_fresh_home": spawner(before, "agent", fresh=True, argv=agent_argv(before)),
    }
    # Each figure beside REF's, one after the other, so drift and the order in
    # the round weigh on both alike.
    runners: dict[str, Callable[[], float]] = {"python_pass": lambda: inst.timed(inst.ref_pass, env_ref)[0]}
    for name, fn in mine.items():
        runners[name] = fn
        if name in theirs:
            runners[f"{name}@{ref_name}"] = theirs[name]
    load = os.getloadavg()
    samples = _install.interleaved(runs, runners)
    load_after = os.getloadavg()

    ref = _install.median_ms(samples["python_pass"])
    goals = {"agent_spawn": "goal <= 4x", "agent_spawn_fresh_home": "info: a machine's first spawn",
             "spawn_sh": "info: the shell's spawn"}
    print(f"python_pass_median_ms {ref:.1f}  (reference: bench venv python -I -c pass, {runs} runs)")
    for name, vals in samples.items():
        if name == "python_pass":
            continue
        med = _install.median_ms(vals)
        goal = goals.get(name.partition("@")[0])
        print(f"{name}_median_ms {med:.1f}  ratio_vs_python_pass {_install.fmt_ratio(med, ref)}"
              + (f"  ({goal})" if goal else ""))
    print(f"loadavg_1m before {load[0]:.2f} after {load_after[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
