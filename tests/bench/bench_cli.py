"""CLI start-up and command latency (docs/explanation/rules.md#measured), against `python -I -c pass`.

Usage: .venv/bin/python tests/bench/bench_cli.py [--runs 30] [--subagents 1000]

Runs every command from a compiled, non-editable copy of the package
(`_install.build()`), stdout piped (not a TTY), state in temp folders. Each
round runs, in turn: the two references, `spawn --cli sh -- true` into a fresh
ZAPCLI_HOME, the same spawn into a home already holding 1,000 finished
subagents, `poll --no-wait ID`, `list` and `list --all` over 1,000 subagents,
and `session` (ZAPCLI_SESSION unset, so the terminal-session derivation runs).
Rounds interleave so drift hits reference and commands alike. After each spawn
the bench waits (untimed) until that subagent's supervisor has exited, so its
start-up never competes with the next measurement.

Prints one figure per line: the median in ms and the ratio to the
`python -I -c pass` median of the same run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import _install

SESSION = "bench-session"


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--subagents", type=int, default=1000)
    opts = ap.parse_args()

    inst = _install.build()
    try:
        return _bench(inst, opts.runs, opts.subagents)
    finally:
        inst.cleanup()


def _bench(inst: _install.Install, runs: int, n_sub: int) -> int:
    import _fixtures

    # --- fixture: n finished subagents in the session, built via the store API
    big = inst.new_home("big")
    inst.use_in_process(big, SESSION)
    t0 = time.perf_counter()
    ids = _fixtures.make_finished(SESSION, n_sub, cwd=str(inst.scratch))
    print(f"# built {n_sub} finished subagents in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    spawn_home = Path(str(big) + "-spawn")  # a copy for the spawn runs (they add/gc subagents)
    shutil.copytree(big, spawn_home)
    poll_id = ids[-1]

    env_big = inst.env(big, session=SESSION)
    env_spawn_big = inst.env(spawn_home, session=SESSION)
    env_nosession = inst.env(big, session=None)
    env_plain = inst.env(inst.new_home("ref"), session=SESSION)
    env_defaults = _default_folders(inst, big)

    # Sanity before timing: each command works and sees what it should.
    listed = inst.run(inst.zapcli("list", "--json", "--limit", "0"), env_big).stdout
    import orjson

    doc = orjson.loads(listed)
    count = len(doc.get("subagents", doc) if isinstance(doc, dict) else doc)
    if count != n_sub:
        raise RuntimeError(f"list --json shows {count} subagents, expected {n_sub}")

    spawn_cmd = inst.zapcli("spawn", "--cli", "sh", "--", "true")

    def ref_pass() -> float:
        return inst.timed(inst.ref_pass, env_plain)[0]

    def ref_pass_repo() -> float:
        return inst.timed(inst.ref_pass_repo, env_plain)[0]

    def ref_import() -> float:
        return inst.timed(inst.ref_import, env_plain)[0]

    def spawn_in(home: Path, env: dict[str, str]) -> float:
        t, proc = inst.timed(spawn_cmd, env)
        sid = proc.stdout.decode().strip()
        status = _fixtures.wait_done(home, sid)
        if status != "completed":
            raise RuntimeError(f"spawned {sid} ended {status}")
        return t

    def spawn_fresh() -> float:
        home = inst.new_home("fresh")
        try:
            return spawn_in(home, inst.env(home, session=SESSION))
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def spawn_big() -> float:
        return spawn_in(spawn_home, env_spawn_big)

    def cmd(argv: list[str], env: dict[str, str]):
        return lambda: inst.timed(argv, env)[0]

    samples = _install.interleaved(runs, {
        "python_pass": ref_pass,
        "python_pass_repo_venv": ref_pass_repo,
        "import_entry": ref_import,
        "spawn": spawn_fresh,
        "spawn_1000_on_disk": spawn_big,
        "poll_no_wait": cmd(inst.zapcli("poll", "--no-wait", poll_id), env_big),
        "poll_no_wait_default_folders": cmd(inst.zapcli("poll", "--no-wait", poll_id), env_defaults),
        "list_1000": cmd(inst.zapcli("list"), env_big),
        "list_all_1000": cmd(inst.zapcli("list", "--all"), env_big),
        "session": cmd(inst.zapcli("session"), env_nosession),
    })

    ref = _install.median_ms(samples["python_pass"])
    goals = {"spawn": "goal <= 3x", "spawn_1000_on_disk": "goal <= 3x", "poll_no_wait": "goal <= 3x",
             "list_1000": "goal <= 4x"}
    labels = {"list_1000": f"list_{n_sub}", "list_all_1000": f"list_all_{n_sub}",
              "spawn_1000_on_disk": f"spawn_{n_sub}_on_disk"}
    print(f"python_pass_median_ms {ref:.1f}  (reference: bench venv python -I -c pass, {runs} runs)")
    for name, vals in samples.items():
        if name == "python_pass":
            continue
        med = _install.median_ms(vals)
        if name == "python_pass_repo_venv":
            print(f"{name}_median_ms {med:.1f}  ratio_vs_python_pass {_install.fmt_ratio(med, ref)}"
                  "  (info: .venv/bin/python -I -c pass, pays the editable-install .pth hook)")
            continue
        if name == "poll_no_wait_default_folders":
            print(f"{name}_median_ms {med:.1f}  ratio_vs_python_pass {_install.fmt_ratio(med, ref)}"
                  "  (info: no ZAPCLI_HOME/ZAPCLI_CONFIG_HOME, so platformdirs finds the folders,"
                  " as for a user with neither set)")
            continue
        goal = f" ({goals[name]})" if name in goals else ""
        print(f"{labels.get(name, name)}_median_ms {med:.1f}  ratio_vs_python_pass "
              f"{_install.fmt_ratio(med, ref)}{goal}")
    return 0


def _default_folders(inst: _install.Install, home: Path) -> dict[str, str]:
    """The environment of a user who sets neither ZAPCLI_HOME nor
    ZAPCLI_CONFIG_HOME: platformdirs resolves both, through XDG folders that
    point into the bench's temp dir (the state one at `home`)."""
    xdg = inst.root / "xdg"
    (xdg / "state").mkdir(parents=True, exist_ok=True)
    (xdg / "config").mkdir(exist_ok=True)
    link = xdg / "state" / "zapcli"
    if not link.exists():
        link.symlink_to(home)
    env = inst.env(None, session=SESSION)
    del env["ZAPCLI_CONFIG_HOME"]
    env.update(XDG_STATE_HOME=str(xdg / "state"), XDG_CONFIG_HOME=str(xdg / "config"))
    return env


if __name__ == "__main__":
    raise SystemExit(main())
