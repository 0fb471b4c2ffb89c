"""Run bash tool calls in one real sandbox and print what happened, as JSON:
the attacks of test_sandbox_hardening.py run through this script so that the
same steps can run as root and as another local user (whose Python runs it
with zapcli on its PYTHONPATH).

Usage: python _box.py SPEC.json  (prints one JSON list, one entry per step)

SPEC: {"ws", "scratch", "hidden": [...], "network": bool, "mode": str,
"policy": {extra Policy fields, those this zapcli does not know are left
out}, "env": {...}, "steps": [{"command", "timeout_s", "kill_helper_after", "check_exists"}]}.
`kill_helper_after` (seconds): SIGKILL the sandbox's helper from outside
while the step's command runs, as the kernel's OOM killer or a stray kill
would. `check_exists`: whether that path exists the moment the call returned.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import psutil

from zapcli import plain
from zapcli.agent.types import ToolContext
from zapcli.sandbox import bwrap
from zapcli.sandbox.policy import Policy, resolve
from zapcli.sandbox.session import Sandbox
from zapcli.tools.env import scrubbed_env
from zapcli.tools.procs import JobRegistry
from zapcli.tools.shell import BashTool


def _helper_pids(bwrap_pids: list[int]) -> list[int]:
    out = []
    for pid in bwrap_pids:
        try:
            procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            continue
        for proc in procs:
            try:
                if any(a.endswith("inner.py") for a in proc.cmdline()):
                    out.append(proc.pid)
            except psutil.Error:
                continue
    return out


def _kill_helper(delay: float, started: list[int], killed: list[int]) -> None:
    time.sleep(delay)
    for pid in _helper_pids(list(started)):
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    policy, _ = resolve(spec.get("mode", "workspace"), workspace=spec["ws"],
                        network=bool(spec.get("network")), scratch=spec["scratch"],
                        hidden=spec.get("hidden", ()))
    known = {f.name for f in plain.fields(Policy)}
    extra = {k: (tuple(v) if isinstance(v, list) else v)
             for k, v in (spec.get("policy") or {}).items() if k in known}
    policy = plain.replace(policy, **extra)
    started: list[int] = []
    box = Sandbox(policy, bwrap.probe().program, on_start=started.append)
    env = scrubbed_env(os.environ)
    env.update(spec.get("env") or {})
    ctx = ToolContext(workspace=spec["ws"], cwd=spec["ws"], env=env, sandbox=box)
    jobs = JobRegistry()
    bash = BashTool(jobs)
    results = []
    try:
        for step in spec["steps"]:
            killed: list[int] = []
            if step.get("kill_helper_after") is not None:
                threading.Thread(target=_kill_helper, daemon=True,
                                 args=(float(step["kill_helper_after"]), started, killed)).start()
            t0 = time.monotonic()
            res = bash.run({"command": step["command"], "timeout_s": step.get("timeout_s", 30)}, ctx)
            elapsed = time.monotonic() - t0
            exists = os.path.exists(step["check_exists"]) if step.get("check_exists") else None
            results.append({"content": res.content, "ok": res.ok, "elapsed": elapsed,
                            "starts": box.starts, "killed": killed, "exists": exists})
    finally:
        jobs.close()
        box.close()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
