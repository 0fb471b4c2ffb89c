"""A real MCP client that checks arguments against the input schema before it
calls: Gemini CLI 0.61 (headless, approval yolo so MCP tools run) with
`zapcli mcp serve` as its MCP server, its model a scripted Gemini server.
The model calls `spawn {cli, task}` and `wait {}` — only what each needs —
and both must reach zapcli (an input schema that lists every optional
parameter as required makes Gemini refuse the call: "params must have
required property 'agent'")."""

from __future__ import annotations

import json
import sys

from tests.backends.gemini_harness import request, run_gemini
from tests.conftest import agent_cli
from zapcli.backends.clis.base import McpServer
from zapcli.testing.server import ScriptedServer

SESSION = "gemini-mcp-e2e"
MARK = "gemini-mcp-result-42"


def _responses(srv: ScriptedServer) -> list[dict]:
    """The functionResponse parts Gemini sent its model, in order."""
    out = []
    for body in srv.requests:
        last = (body.get("contents") or [{}])[-1]
        out += [p["functionResponse"] for p in last.get("parts", []) if "functionResponse" in p]
    return out


def test_gemini_calls_spawn_and_wait_with_only_what_they_need(zap, tmp_path):
    gemini = agent_cli("gemini")
    script = [{"match": "GEMINI-MCP-E2E", "turns": [
        {"tool_calls": [{"name": "mcp_zapcli_spawn", "arguments": {"cli": "sh",
                                                                   "task": f"echo {MARK}"}}]},
        {"tool_calls": [{"name": "mcp_zapcli_wait", "arguments": {}}]},
        {"text": "done"}]}]
    env = {k: v for k, v in zap.env.items() if k.startswith(("ZAPCLI_", "PYTHON", "PATH"))}
    env["ZAPCLI_SESSION"] = SESSION
    server = McpServer("zapcli", sys.executable, ("-m", "zapcli", "mcp", "serve"), env=env,
                       cwd=str(zap.cwd))
    with ScriptedServer(script, protocol="gemini") as srv:
        run = run_gemini(gemini, request(tmp_path, srv, "GEMINI-MCP-E2E: run it through zapcli",
                                         approval="full", mcp_servers=(server,)))
        main = [b for b in srv.requests if b.get("tools")]  # not the CLI's utility calls
        assert main, (run.stderr, run.lines)
        declared = {d["name"]: d for d in main[0]["tools"][0]["functionDeclarations"]
                    if d["name"].startswith("mcp_zapcli_")}
        answers = _responses(srv)
    assert run.outcome is not None and run.outcome.status == "completed", (run.stderr, run.lines)
    spawned, waited = (json.dumps(a["response"]) for a in answers)
    assert "required property" not in spawned + waited, answers  # Gemini let both through
    # what Gemini told its model: plain types, only `task` required for spawn
    spawn_schema = declared["mcp_zapcli_spawn"].get("parametersJsonSchema") or {}
    assert spawn_schema.get("required") == ["task"], spawn_schema
    assert spawn_schema["properties"]["cli"]["type"] == "string"
    [sid] = [v["id"] for v in zap.json("list", env={"ZAPCLI_SESSION": SESSION})["subagents"]]
    assert sid in spawned
    # wait with no ids waited for the session's subagent and showed its output
    assert f"{sid}: completed" in waited and MARK in waited, waited
