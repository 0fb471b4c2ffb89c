"""What workspace trust costs a spawn (#27 item 2).

Usage: .venv/bin/python tests/bench/bench_trust.py [--runs 300] [--spawns 20]

All from a compiled, non-editable copy of the package, state in temp folders.

1. The trust check of one spawn, in this process: what `ops.spawn.prepare`
   adds for it — the decision (`trust.decide`: the record in the config
   folder, or `trusted:` in config.yaml), each file read and hashed once,
   what the spawn record keeps (`frozen`) and the one line (`notice`) —
   in four workspaces: `none` (no zapcli files: the usual case), `trusted`
   (config.yaml, mcp.json, 6 definitions and 3 skills, recorded by `zapcli
   trust`), `untrusted` (the same files, never trusted), `config` (the same,
   under a folder named by `trusted:` in config.yaml). Median µs, goal
   <= 2 ms each.
2. The reference, measured in the same run: `zapcli spawn --cli sh -- true`
   in the `none` and the `trusted` workspace (subprocesses, interleaved),
   median wall ms; each check is printed as a share of the spawn's own time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

import _install

GOAL_MS = 2.0
DEFINITION = ("name: {name}\ndescription: a definition of this repository\ntools: [read, grep, glob]\n"
              "mcp: {{servers: [lint]}}\nprompt: |\n" + "  Work carefully on the task you were given.\n" * 40)


def _workspace(base: Path, name: str, files: bool) -> Path:
    ws = base / name
    ws.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    if not files:
        return ws
    own = ws / ".zapcli"
    (own / "subagents").mkdir(parents=True)
    (own / "config.yaml").write_text("timeout_s: 600\nproviders:\n  local: {base_url: "
                                     "'http://127.0.0.1:11434/v1'}\n")
    (own / "mcp.json").write_text(json.dumps({"mcpServers": {"lint": {
        "command": "npx", "args": ["-y", "some-lint-server"], "allow": ["check"]}}}))
    for i in range(6):
        (own / "subagents" / f"agent-{i}.yml").write_text(DEFINITION.format(name=f"agent-{i}"))
    for root, skill in ((".zapcli/skills", "release"), (".claude/skills", "review"),
                        (".agents/skills", "triage")):
        folder = ws / root / skill
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {skill}\ndescription: how we {skill}\n---\n"
                                         + "Step by step.\n" * 200)
    return ws


def _check_us(ws: Path, runs: int) -> list[float]:
    from zapcli import trust

    samples = []
    for _ in range(runs + 5):
        t0 = time.perf_counter()
        with trust.Scope(ws) as verdict:
            verdict.frozen()
            verdict.notice()
        samples.append(time.perf_counter() - t0)
    return samples[5:]


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--spawns", type=int, default=20)
    opts = ap.parse_args()
    inst = _install.build()
    try:
        home = inst.new_home("trust")
        inst.use_in_process(home, "bench-trust")
        import zapcli
        from zapcli import trust_store

        if not zapcli.__file__ or not zapcli.__file__.startswith(str(inst.root)):
            raise RuntimeError(f"zapcli resolved to {zapcli.__file__}, not the compiled copy")
        base = inst.root / "work"
        spaces = {"none": _workspace(base, "none", False),
                  "trusted": _workspace(base, "trusted", True),
                  "untrusted": _workspace(base, "untrusted", True)}
        trust_store.grant(spaces["trusted"])
        listed = base / "listed"
        spaces["config"] = _workspace(listed, "config", True)
        config = Path(os.environ["ZAPCLI_CONFIG_HOME"]) / "config.yaml"
        config.write_text(f"timeout_s: 300\ntrusted: [{listed}]\n")
        checks = {name: _install.median_ms(_check_us(ws, opts.runs)) for name, ws in spaces.items()}
        env = inst.env(home, session="bench-trust")

        def spawn(ws: Path) -> float:
            t0 = time.perf_counter()
            subprocess.run(inst.zapcli("spawn", "--cli", "sh", "--", "true"), env=env, cwd=ws,
                           check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
            return time.perf_counter() - t0

        samples = _install.interleaved(opts.spawns, {"none": lambda: spawn(spaces["none"]),
                                                     "trusted": lambda: spawn(spaces["trusted"])})
        spawn_ms = {name: _install.median_ms(vals) for name, vals in samples.items()}
        print(f"spawn_sh_median_ms_none {spawn_ms['none']:.1f}  (reference: `zapcli spawn --cli sh "
              f"-- true`, no zapcli files, {opts.spawns} runs)")
        print(f"spawn_sh_median_ms_trusted {spawn_ms['trusted']:.1f}  (10 trusted files: config, "
              f"mcp.json, 6 definitions, 3 skills; ratio {_install.fmt_ratio(spawn_ms['trusted'], spawn_ms['none'])})")
        for name, ms in checks.items():
            ref = spawn_ms["none" if name == "none" else "trusted"]
            verdict = "ok" if ms <= GOAL_MS else "OVER"
            print(f"trust_check_ms_{name} {ms:.3f}  (goal <= {GOAL_MS} ms: {verdict}; "
                  f"{100 * ms / ref:.2f}% of the spawn's own {ref:.1f} ms; {opts.runs} runs)")
    finally:
        inst.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
