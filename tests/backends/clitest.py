"""Helpers for the agent-CLI backend tests: pointing `zapcli spawn --cli X`
at the pinned CLIs (through `backends.X.command` in config.yaml) and at one
scripted server per protocol, and reading what a subagent left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.conftest import Zap, agent_cli, trail_records, wait_until
from zapcli.testing.server import ScriptedServer

KEYS = {"claude": "sk-ant-test-key-0123456789", "codex": "sk-test-codex-key-0123456789",
        "gemini": "gemini-test-key-0123456789", "opencode": "sk-test-opencode-key-0123456789",
        "qwen": "sk-test-qwen-key-0123456789", "pi": "sk-test-pi-key-0123456789"}
PROTOCOL = {"claude": "anthropic", "codex": "responses", "gemini": "gemini", "opencode": "chat",
            "qwen": "chat", "pi": "chat"}
MODEL = {"claude": None, "codex": "gpt-5.5", "gemini": "gemini-2.5-flash", "opencode": "gpt-test",
         "qwen": "qwen-test", "pi": "pi-test"}


def cli_env(cli: str, srv: ScriptedServer, home: Path | None = None) -> dict[str, str]:
    """The CLI's own endpoint and key variables (docs/explanation/rules.md#agent-clis). HOME is the
    test's: `home`, else the user home tests/backends/conftest.py made."""
    env: dict[str, str] = {}
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        env["HOME"] = str(home)
    if cli == "claude":
        env.update(ANTHROPIC_BASE_URL=srv.base_url, ANTHROPIC_API_KEY=KEYS[cli])
    elif cli == "gemini":
        env.update(GOOGLE_GEMINI_BASE_URL=srv.root_url, GEMINI_API_KEY=KEYS[cli])
    else:
        env.update(OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY=KEYS[cli])
    return env


def one_step(call: dict[str, Any]) -> list[dict[str, Any]]:
    """A scripted model's rules for a task saying SUMMARIZE: one step (the
    tool call `call`), then the summary "Summary: a demo project."."""
    return [{"match": "SUMMARIZE", "turns": [{"text": "First a step.", "tool_calls": [call]},
                                             {"text": "Summary: a demo project."}]}]


def shell_call(command: str, description: str = "look") -> dict[str, Any]:
    """gemini's and qwen's shell tool called with `command`."""
    return {"name": "run_shell_command", "arguments": {"command": command, "is_background": False,
                                                      "description": description}}


def one_step_run(zap: Zap, cli: str, call: dict[str, Any], home: Path,
                 *extra: str) -> tuple[str, str]:
    """`cli` spawned (with `extra` flags) on a task saying SUMMARIZE, its model
    making the one tool call `call` then summing up (`one_step`); (its id,
    every request its model got, as JSON text), once it ended."""
    with ScriptedServer(one_step(call), protocol=PROTOCOL[cli]) as srv:
        sid = spawn(zap, cli, "SUMMARIZE the README", cli_env(cli, srv, home=home), *extra)
        zap("wait", sid, "--timeout", "90", timeout=120)
        return sid, json.dumps(srv.requests)


def configure(zap: Zap, *clis: str, extra: str = "") -> None:
    """config.yaml naming the pinned CLIs (skips the test when one is missing)."""
    lines = ["backends:"]
    for cli in clis:
        lines += [f"  {cli}:", f"    command: {agent_cli(cli)}"]
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")


def spawn(zap: Zap, cli: str, task: str, env: dict[str, str], *extra: str) -> str:
    args = ["spawn", "--cli", cli, *extra]
    if MODEL[cli] and "--model" not in extra:
        args += ["--model", str(MODEL[cli])]
    proc = zap(*args, "--", task, env=env)
    assert proc.returncode == 0, proc.err
    sid = proc.out.strip()
    assert sid.startswith("sa_"), proc.out
    return sid


def records(zap: Zap, sid: str, rtype: str | None = None) -> list[dict[str, Any]]:
    return [r for r in trail_records(zap.trail(sid)) if rtype is None or r["type"] == rtype]


def home(zap: Zap, sid: str) -> Path:
    return zap.home / "subagents" / f"{sid}.home"


def secret_leaks(zap: Zap, sid: str, secret: str) -> list[str]:
    """Files of the subagent (trail, captures, every file of its config home)
    holding `secret` in clear."""
    needle = secret.encode()
    found = []
    paths = [zap.trail(sid), zap.home / "subagents" / f"{sid}.out",
             zap.home / "subagents" / f"{sid}.err"]
    paths += [p for p in home(zap, sid).rglob("*") if p.is_file() and not p.is_symlink()]
    for p in paths:
        try:
            if needle in p.read_bytes():
                found.append(str(p))
        except OSError:
            continue
    return found


def cmdlines_with(*needles: str) -> list[str]:
    """Command lines of live processes holding any of `needles` (argv / ps)."""
    import psutil

    hits = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if any(n in line for n in needles):
            hits.append(line)
    return hits


def wait_session(zap: Zap, sid: str, timeout: float = 60) -> dict[str, Any]:
    """The `session` record, once the CLI said its session id."""
    return wait_until(lambda: next(iter(records(zap, sid, "session")), None),  # type: ignore[return-value]
                      timeout, 0.1)


def usage_rows(zap: Zap, sid: str) -> list[dict[str, Any]]:
    doc = zap.json("usage")
    return [s for p in doc["sessions"] for s in p["subagents"] if s["id"] == sid]


def replay_text(zap: Zap, sid: str) -> str:
    proc = zap("replay", sid)
    assert proc.returncode == 0, proc.err
    return proc.out


def dump(zap: Zap, sid: str) -> str:
    """Everything about a subagent, for an assertion message."""
    err = (zap.home / "subagents" / f"{sid}.err")
    return json.dumps(records(zap, sid), indent=1)[-6000:] + "\nSTDERR:\n" + (
        err.read_text(errors="replace")[-3000:] if err.exists() else "")


def marked(sid: str) -> list[int]:
    from zapcli.supervisor.kill import marked as find

    return find(sid)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def cli_definition(zap: Zap, name: str, cli: str, tools: list[str], model: str | None = None) -> None:
    """A trusted workspace definition `name` that runs `cli` with `tools`: a
    child a `zapcli run --approval full --no-sandbox` may start without
    asking anyone (delegation never widens: an agent CLI with every tool of
    its own would need the person's approval)."""
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"name: {name}", f"description: {cli} for a test", f"cli: {cli}",
             f"tools: [{', '.join(tools)}]"] + ([f"model: {model}"] if model else [])
    (folder / f"{name}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    zap("trust", check=True)

