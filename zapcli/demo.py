"""`make demo`: the main job end to end, offline, no API key.

Runs the real `zapcli` CLI as a user would (each step is printed as the shell
command it is): spawns several `sh` subagents in parallel over this
repository's own files, polls them, waits, kills a slow one, lists the
session and replays one trail. State goes to a fresh temporary ZAPCLI_HOME so
the demo never touches your own subagents.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

JOBS = {
    "lines per module": "find zapcli -name '*.py' | sort | xargs wc -l | sort -n | tail -8",
    "largest functions": (
        "python3 - <<'PY'\nimport ast,pathlib\nrows=[]\n"
        "for p in pathlib.Path('zapcli').rglob('*.py'):\n"
        "    for n in ast.walk(ast.parse(p.read_text())):\n"
        "        if isinstance(n,(ast.FunctionDef,ast.AsyncFunctionDef)):\n"
        "            rows.append((n.end_lineno-n.lineno+1,f'{p}:{n.lineno} {n.name}'))\n"
        "for size,name in sorted(rows)[-5:]: print(size,'lines',name)\nPY"),
    "compile check": "python3 -m compileall -q zapcli && echo 'all modules compile'",
    "TODO markers": "grep -rn 'TODO\\|FIXME' zapcli tests | wc -l | xargs echo 'TODO/FIXME markers:'",
}


def sh(argv: list[str], env: dict[str, str], capture: bool = False) -> str:
    print(f"\n$ {' '.join(shlex.quote(a) for a in argv)}", flush=True)
    proc = subprocess.run(argv, env=env, cwd=REPO, text=True, stdout=subprocess.PIPE if capture else None)
    if capture:
        out = proc.stdout.strip()
        print(out, flush=True)
        return out
    return ""


def main() -> int:
    home = tempfile.mkdtemp(prefix="zapcli-demo-")
    env = {**os.environ, "ZAPCLI_HOME": home, "ZAPCLI_SESSION": "demo"}
    zap = [sys.executable, "-m", "zapcli"]
    print(f"# zapcli demo — state in {home} (ZAPCLI_HOME), session 'demo'")
    print("# 1. spawn four sh subagents in parallel over this repository, plus one slow one")
    ids = {}
    for title, cmd in JOBS.items():
        ids[title] = sh(zap + ["spawn", "--cli", "sh", "--timeout", "60", "--", cmd], env, capture=True)
    slow = sh(zap + ["spawn", "--cli", "sh", "--", "echo 'scanning forever…'; sleep 600"], env, capture=True)
    print("\n# 2. poll: returns as soon as every named subagent has finished (at most 5 s + --wait-secs)")
    sh(zap + ["poll", *ids.values(), "--wait-secs", "10"], env)
    print("\n# 3. the slow one is still running; list shows the session, then kill ends its whole tree")
    sh(zap + ["list"], env)
    sh(zap + ["kill", slow, "--grace", "1"], env)
    print("\n# 4. wait: exit 0 only when every awaited subagent completed")
    sh(zap + ["wait", *ids.values()], env)
    sh(zap + ["poll", "--no-wait", slow], env)
    print("\n# 5. replay: everything one subagent did, from its trail")
    sh(zap + ["replay", ids["lines per module"]], env)
    print(f"\n# done. Try: ZAPCLI_HOME={home} zapcli list --all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
