"""A real third-party MCP client end to end: Claude Code 2.1.328 started with
an MCP config that runs `zapcli mcp serve`, its model a scripted Anthropic
server that calls zapcli's spawn, then wait, then answers with what the
subagent printed. The subagents outlive Claude Code and stay in the session."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.conftest import agent_cli
from tests.mcp.conftest import tool_result_text
from zapcli.testing.server import ScriptedServer

SESSION = "claude-mcp-e2e"
MARK = "subagent-result-42"


class _Quick:
    """`{quick}`: the id of the quick subagent, read when the turn is served."""

    def __init__(self, zap: Any):
        self.zap = zap

    def __str__(self) -> str:
        from zapcli.lifecycle import session

        for sid in session.members(SESSION):
            first = self.zap.trail(sid).read_text(encoding="utf-8").split("\n", 1)[0]
            if MARK in first:
                return sid
        return "none-yet"


class _Echo:
    """`{echo}`: the line of the last tool result that carries MARK — what a
    model reading the wait result would quote."""

    def __init__(self) -> None:
        self.srv: ScriptedServer | None = None

    def __str__(self) -> str:
        if self.srv is None or not self.srv.requests:
            return ""
        found = [line.strip() for line in tool_result_text(self.srv.requests[-1]).split("\n")
                 if MARK in line and "Task:" not in line]
        return found[-1] if found else ""


def test_claude_code_spawns_and_waits_through_zapcli_mcp(zap, tmp_path):
    claude = agent_cli("claude")
    echo = _Echo()
    script = [{"match": "CLAUDE-MCP-E2E", "turns": [
        {"tool_calls": [
            {"name": "mcp__zapcli__spawn", "arguments": {"task": f"echo {MARK}", "cli": "sh"}},
            {"name": "mcp__zapcli__spawn", "arguments": {"task": "sleep 30", "cli": "sh"}}]},
        {"tool_calls": [{"name": "mcp__zapcli__wait",
                         "arguments": {"ids": ["{quick}"], "timeout": 60}}]},
        {"text": "The subagent printed: {echo}"}]}]
    home = tmp_path / "claude-home"
    home.mkdir()
    server_env = {k: v for k, v in zap.env.items() if k.startswith(("ZAPCLI_", "PYTHON", "PATH"))}
    server_env["ZAPCLI_SESSION"] = SESSION
    config = {"mcpServers": {"zapcli": {"type": "stdio", "command": sys.executable,
                                        "args": ["-m", "zapcli", "mcp", "serve"],
                                        "env": server_env, "alwaysLoad": True}}}
    (home / "mcp.json").write_text(json.dumps(config))
    with ScriptedServer(script, protocol="anthropic",
                        variables={"quick": _Quick(zap), "echo": echo}) as srv:  # type: ignore[dict-item]
        echo.srv = srv
        env = {"PATH": zap.env["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
               "CLAUDE_CONFIG_DIR": str(home), "ANTHROPIC_BASE_URL": srv.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "ENABLE_TOOL_SEARCH": "false",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        proc = subprocess.run(
            [str(claude), "-p", "--output-format", "stream-json", "--verbose",
             "--setting-sources", "user", "--mcp-config", str(home / "mcp.json"),
             "--strict-mcp-config", "--allowedTools", "mcp__zapcli__spawn,mcp__zapcli__wait"],
            input=b"CLAUDE-MCP-E2E: run the job through zapcli", env=env, cwd=zap.cwd,
            capture_output=True, timeout=120)
        events = [json.loads(x) for x in proc.stdout.decode().splitlines() if x.startswith("{")]
        raw_wait = srv.requests[-1]["messages"][-1]["content"][0]["content"]
        wait_result = tool_result_text(srv.requests[-1])
    final = [e for e in events if e.get("type") == "result"][-1]
    assert proc.returncode == 0 and not final["is_error"], proc.stderr.decode()[-2000:]
    init = next(e for e in events if e.get("subtype") == "init")
    assert [(s["name"], s["status"]) for s in init["mcp_servers"]] == [("zapcli", "connected")]
    # what Claude Code gave its model from wait: the compact structured document
    assert isinstance(raw_wait, str) and json.loads(raw_wait)["text"] == wait_result
    assert MARK in wait_result and "completed" in wait_result
    assert final["result"] == f"The subagent printed: {MARK}"
    # Claude Code and its MCP server are gone; both subagents stay in the session
    listed = zap.json("list", env={"ZAPCLI_SESSION": SESSION})["subagents"]
    states = {v["task"]: v["status"] for v in listed}
    assert states == {f"echo {MARK}": "completed", "sleep 30": "running"}
