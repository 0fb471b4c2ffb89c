"""Runs the real Claude Code CLI the way the adapter says (argv, env, files in
the private config home, the task on stdin) against a scripted Anthropic
server, and feeds its stdout through the adapter's parser. Also captures
real streams into fixtures: `python -m tests.backends.claude_harness`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli.backends.clis.base import CliLaunch, CliRequest, Record
from zapcli.backends.clis.claude import ClaudeBackend
from zapcli.backends.clis.claude_events import ClaudeEventParser
from zapcli.testing.server import ScriptedServer
from zapcli.trail.model import Outcome

REPO = Path(__file__).resolve().parents[2]
CLAUDE = REPO / ".cache" / "agent-clis" / "node_modules" / ".bin" / "claude"
FIXTURES = Path(__file__).parent / "fixtures" / "claude"


@dataclass
class Run:
    launch: CliLaunch
    exit_code: int
    lines: list[bytes]
    stderr: str
    records: list[Record] = field(default_factory=list)
    parser: ClaudeEventParser = field(default_factory=ClaudeEventParser)
    outcome: Outcome | None = None

    def of(self, rtype: str) -> list[dict[str, Any]]:
        return [f for t, f in self.records if t == rtype]


def base_env(srv: ScriptedServer, home: Path) -> dict[str, str]:
    """A small, offline environment: the endpoint and a key, nothing of the user's."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "LANG": "C.UTF-8", "ANTHROPIC_BASE_URL": srv.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}


def request(tmp: Path, srv: ScriptedServer, task: str, **kw: Any) -> CliRequest:
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    home = tmp / "config-home"
    home.mkdir(mode=0o700, exist_ok=True)
    env = dict(base_env(srv, Path(os.environ["HOME"])), **kw.pop("env", {}))
    return CliRequest(task=task, cwd=str(work), workspace=str(work), config_home=home,
                      env=env, **kw)


def run_claude(req: CliRequest, command: list[str] | None = None, timeout: float = 90,
               grace: float = 5.0) -> Run:
    """Start claude as the launch says, feed each stdout line to the parser as
    it arrives; once the parser says terminal, give claude `grace` seconds to
    exit, then kill it (what the runner does)."""
    launch = ClaudeBackend().launch(req, command or [str(CLAUDE)])
    for rel, text in launch.files.items():
        path = req.config_home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    proc = subprocess.Popen(launch.argv, env=launch.env, cwd=req.cwd,
                            stdin=subprocess.PIPE if launch.stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err: list[bytes] = []
    err_reader = threading.Thread(target=lambda: err.append(proc.stderr.read()),  # type: ignore[union-attr]
                                  daemon=True)
    err_reader.start()
    if launch.stdin is not None:
        threading.Thread(target=_write_stdin, args=(proc, launch.stdin), daemon=True).start()
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    run = Run(launch, 0, [], "")
    for line in proc.stdout:  # type: ignore[union-attr]
        run.lines.append(line.rstrip(b"\n"))
        try:
            event = json.loads(line.rstrip(b"\r\n").decode("utf-8", "replace"))
        except ValueError:
            continue
        run.records += run.parser.feed(event)
        if run.parser.terminal:
            killer.cancel()
            killer = threading.Timer(grace, proc.kill)
            killer.start()
    run.exit_code = proc.wait()
    killer.cancel()
    err_reader.join(5)
    run.stderr = b"".join(err).decode("utf-8", "replace")
    run.outcome = run.parser.finish(run.exit_code, run.stderr[-4000:])
    return run


def _write_stdin(proc: subprocess.Popen[bytes], data: bytes) -> None:
    try:
        proc.stdin.write(data)  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
    except (BrokenPipeError, OSError):
        pass


def _capture(name: str, script: list[dict[str, Any]], task: str, **kw: Any) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(script, protocol="anthropic") as srv:
        run = run_claude(request(Path(tmp), srv, task, **kw))
        text = b"\n".join(ln for ln in run.lines if ln.strip()).decode()
        text = text.replace(tmp, "/tmp/T")
        (FIXTURES / f"{name}.jsonl").write_text(text + "\n", encoding="utf-8")
        print(name, run.exit_code, run.outcome)


def main() -> None:
    """Capture the real streams the parser tests replay."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    bash = {"name": "Bash", "arguments": {"command": "echo hi-from-bash", "description": "echo"}}
    _capture("tool_turn", [{"match": "say hi", "turns": [
        {"reasoning": "I should run echo.", "text": "Running it.", "tool_calls": [bash]},
        {"text": "All done: hi-from-bash"}]}], "say hi please", approval="full")
    _capture("api_error", [{"match": "err", "turns": [
        {"http_error": {"status": 400, "message": "scripted bad request", "times": 20}}]}],
        "err test", approval="full")
    slow = {"name": "Bash", "arguments": {
        "command": "python3 -c 'import time; time.sleep(2)'; echo bgdone",
        "description": "slow suite", "run_in_background": True}}
    _capture("background_bash", [{"match": "bg test", "turns": [
        {"text": "Starting in background.", "tool_calls": [slow]},
        {"text": "The suite is running in the background."},
        {"text": "Background finished: bgdone"}]}], "bg test", approval="full")
    agent = {"name": "Agent", "arguments": {"description": "sub work", "subagent_type":
                                            "general-purpose", "prompt": "SUBTASK-7 please echo"}}
    sub_bash = {"name": "Bash", "arguments": {"command": "echo from-sub", "description": "sub"}}
    _capture("nested_agent", [
        {"match": "SUBTASK-7", "turns": [{"text": "Sub: running.", "tool_calls": [sub_bash]},
                                         {"text": "Sub report: from-sub"}]},
        {"match": "nest test", "turns": [{"text": "Delegating.", "tool_calls": [agent]},
                                         {"text": "Main waits for the sub agent."},
                                         {"text": "Main done: from-sub"}]}],
        "nest test", approval="full")


if __name__ == "__main__":
    sys.exit(main())
