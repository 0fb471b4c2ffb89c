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
`python -I -c pass` median of the same run. `--against REF` also times the
hot commands (spawn, poll, list) as the repository's commit REF has them,
interleaved in the same rounds over the same subagents (an A/B in one run;
each line of those is marked `@REF`).
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
    ap.add_argument("--against", default="", metavar="REF",
                    help="also time spawn, poll and list as this commit has them (e.g. main)")
    opts = ap.parse_args()

    inst = _install.build()
    before = _install.build("zapcli-bench-before-", ref=opts.against) if opts.against else None
    try:
        return _bench(inst, opts.runs, opts.subagents, before, opts.against)
    finally:
        inst.cleanup()
        if before is not None:
            before.cleanup()


def _bench(inst: _install.Install, runs: int, n_sub: int,
           before: _install.Install | None = None, ref_name: str = "") -> int:
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
    spawn_before_home = Path(str(big) + "-spawn-before")  # the same start, for REF's spawns
    if before is not None:
        shutil.copytree(big, spawn_before_home)

    def ref_pass() -> float:
        return inst.timed(inst.ref_pass, env_plain)[0]

    def ref_pass_repo() -> float:
        return inst.timed(inst.ref_pass_repo, env_plain)[0]

    def ref_import() -> float:
        return inst.timed(inst.ref_import, env_plain)[0]

    def spawn_in(home: Path, env: dict[str, str], argv: list[str] = spawn_cmd) -> float:
        t, proc = inst.timed(argv, env)
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

    runners = {
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
    }
    if before is not None:  # REF's commands, run from the same interpreter setup and state
        b = before

        def b_env(home: Path) -> dict[str, str]:
            return {**b.env(home, session=SESSION), "ZAPCLI_CONFIG_HOME": str(inst.root / "config")}

        def b_spawn_fresh() -> float:
            home = inst.new_home("fresh-before")
            try:
                return spawn_in(home, b_env(home), b.zapcli("spawn", "--cli", "sh", "--", "true"))
            finally:
                shutil.rmtree(home, ignore_errors=True)

        runners.update({
            f"spawn@{ref_name}": b_spawn_fresh,
            f"spawn_1000_on_disk@{ref_name}": lambda: spawn_in(
                spawn_before_home, b_env(spawn_before_home), b.zapcli("spawn", "--cli", "sh", "--", "true")),
            f"poll_no_wait@{ref_name}": cmd(b.zapcli("poll", "--no-wait", poll_id), b_env(big)),
            f"list_1000@{ref_name}": cmd(b.zapcli("list"), b_env(big)),
            f"list_all_1000@{ref_name}": cmd(b.zapcli("list", "--all"), b_env(big)),
        })
    samples = _install.interleaved(runs, runners)

    ref = _install.median_ms(samples["python_pass"])
    goals = {"spawn": "goal <= 3x", "spawn_1000_on_disk": "goal <= 3x", "poll_no_wait": "goal <= 3x",
             "list_1000": "goal <= 4x", "list_all_1000": "goal <= 3x"}
    labels = {"list_1000": f"list_{n_sub}", "list_all_1000": f"list_all_{n_sub}",
              "spawn_1000_on_disk": f"spawn_{n_sub}_on_disk"}
    print(f"python_pass_median_ms {ref:.1f}  (reference: bench venv python -I -c pass, {runs} runs)")
    for name, vals in samples.items():
        if name == "python_pass":
            continue
        med = _install.median_ms(vals)
        if name == "python_pass_repo_venv":
            print(f"{name}_median_ms {med:.1f}  ratio_vs_python_pass {_install.fmt_ratio(med, ref)}"
                  "  (info: .venv/bin/python -I -c pass, with the .pth files of the repository's venv)")
            continue
        if name == "poll_no_wait_default_folders":
            print(f"{name}_median_ms {med:.1f}  ratio_vs_python_pass {_install.fmt_ratio(med, ref)}"
                  "  (info: no ZAPCLI_HOME/ZAPCLI_CONFIG_HOME, so platformdirs finds the folders,"
                  " as for a user with neither set)")
            continue
        base, at, ref_label = name.partition("@")
        goal = f" ({goals[base]})" if base in goals else ""
        print(f"{labels.get(base, base)}{at}{ref_label}_median_ms {med:.1f}  ratio_vs_python_pass "
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
