"""An import budget per hot command (#12 speed): `spawn --cli sh`, `poll
--no-wait` and `list` import no heavy library and stay within a module
count. Counts modules, never time (tests do not assert wall-clock speed)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
base = set(sys.modules)
from zapcli.cli.entry import main
main(json.loads(sys.argv[1]))
sys.stderr.write("MODULES " + json.dumps(sorted(set(sys.modules) - base)) + "\\n")
"""

# Nothing a hot command needs: the CLI framework, the model SDKs, YAML, psutil
# (procfs answers identity on Linux), asyncio, threads of work, sqlite.
HEAVY = {"typer", "click", "rich", "openai", "anthropic", "mcp", "yaml", "psutil", "pydantic",
         "httpx", "asyncio", "concurrent", "sqlite3", "ctypes", "platformdirs", "filelock"}
# Modules each may import beyond a bare interpreter (measured, with a little room).
BUDGET = {"spawn": 150, "poll": 140, "list": 145}


@pytest.mark.parametrize("name,argv", [
    ("spawn", ["spawn", "--cli", "sh", "--", "true"]),
    ("poll", ["poll", "--no-wait", "0badc0de"]),
    ("list", ["list"]),
])
def test_hot_commands_stay_within_their_import_budget(zap, name, argv):
    res = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], env=zap.env, cwd=zap.cwd,
                         capture_output=True, text=True, timeout=60)
    line = next(x for x in res.stderr.splitlines() if x.startswith("MODULES "))
    modules = json.loads(line[len("MODULES "):])
    heavy = sorted({m.split(".")[0] for m in modules} & HEAVY)
    assert not heavy, f"{name} imports {heavy}"
    assert len(modules) <= BUDGET[name], f"{name} imports {len(modules)} modules: {modules}"
