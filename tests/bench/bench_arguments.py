"""What checking a tool call's arguments against its schema costs per call
(`zapcli.agent.arguments.check_args`, run by the agent loop before every
tool call) and per `zapcli call` / MCP call (`zapcli.toolapi.dispatch.check`).

Usage: .venv/bin/python tests/bench/bench_arguments.py [--n 20000]

Times, in this process: check_args on four real schemas (glob, bash, the
`subagent` tool of `zapcli run` — the largest, 19 nullable properties — and
a plugin-style schema with bounds), dispatch.check on a spawn call; the
reference, measured in the same run, is decoding the same arguments from
their JSON text (what the loop does for every call anyway). Also the first
call's cost (the validator is made and, for jsonschema, imported once per
process) against the reference of importing `openai`, which every agent
runner pays at start.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import _install

_install.ensure_venv()
sys.path.insert(0, str(_install.REPO))

FIRST = """
import time, json
t = time.perf_counter()
from zapcli.agent.arguments import check_args
from zapcli.agent.types import ToolSpec
spec = ToolSpec("glob", "d", {"type": "object", "properties": {"pattern": {"type": "string"}},
                "required": ["pattern"], "additionalProperties": False})
check_args(spec, {"pattern": "*.py"})
print(json.dumps({"first": time.perf_counter() - t}))
"""
OPENAI = "import time, json\nt = time.perf_counter()\nimport openai\nprint(json.dumps({'first': time.perf_counter() - t}))"


def per_call(fn, n: int) -> float:
    best = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - t) / n)
    return statistics.median(best) * 1e6


def first_call(code: str) -> float:
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=str(_install.REPO), check=True).stdout
        runs.append(json.loads(out)["first"])
    return statistics.median(runs) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    n = ap.parse_args().n
    import orjson

    from zapcli.agent.arguments import check_args
    from zapcli.agent.types import ToolSpec
    from zapcli.toolapi import dispatch
    from zapcli.toolapi.schema import subagent_schema
    from zapcli.tools.search import GlobTool
    from zapcli.tools.shell import BashTool

    subagent = ToolSpec("subagent", "d", subagent_schema(run=True))
    bounded = ToolSpec("plugin", "d", {
        "type": "object", "additionalProperties": False, "required": ["ids"],
        "properties": {"ids": {"type": "array", "items": {"type": "string"}},
                       "wait_secs": {"type": "integer", "minimum": 1, "maximum": 30},
                       "mode": {"type": "string", "enum": ["fast", "slow"]}}})
    spawn_call = {"action": "spawn", "task": "echo hi", "cli": "sh", "timeout": 30,
                  **{k: None for k in subagent.parameters["properties"]
                     if k not in ("action", "task", "cli", "timeout")}}
    cases = [
        ("glob", GlobTool.spec, {"pattern": "**/*.py", "path": "src"}),
        ("bash", BashTool.spec, {"command": "make test", "timeout_s": "120"}),
        ("subagent (spawn)", subagent, spawn_call),
        ("plugin (bounds, enum)", bounded, {"ids": ["a", "b"], "wait_secs": 5, "mode": "fast"}),
    ]
    print(f"{'schema':<24}{'check_args µs':>14}{'decode µs':>11}{'ratio':>8}")
    for name, spec, args in cases:
        text = orjson.dumps(args)
        check_args(spec, args)  # the validator is made once per schema
        ours = per_call(lambda spec=spec, args=args: check_args(spec, args), n)
        ref = per_call(lambda text=text: orjson.loads(text), n)
        print(f"{name:<24}{ours:>14.2f}{ref:>11.2f}{ours / ref:>8.1f}")
    doc = {k: v for k, v in spawn_call.items() if k != "action"}
    dispatch.check("spawn", doc)
    ours = per_call(lambda: dispatch.check("spawn", doc), n)
    ref = per_call(lambda: orjson.loads(orjson.dumps(doc)), n)
    print(f"{'dispatch.check (spawn)':<24}{ours:>14.2f}{ref:>11.2f}{ours / ref:>8.1f}")
    first, openai = first_call(FIRST), first_call(OPENAI)
    print(f"first check_args in a new process: {first:.1f} ms; importing openai (every agent "
          f"runner's start): {openai:.1f} ms; ratio {first / openai:.2f}")


if __name__ == "__main__":
    main()
