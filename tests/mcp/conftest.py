"""What the MCP tests share: a scripted chat model for agent subagents, the
environment `zapcli mcp serve` runs with, and a way to drive the official
SDK client from a synchronous test (`run(async_fn)`)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from zapcli.testing import ScriptedServer

KEY = "sk-test-mcp-0123456789"


@pytest.fixture
def model(zap):
    servers: list[ScriptedServer] = []

    def start(script: list[dict[str, Any]]) -> ScriptedServer:
        srv = ScriptedServer(script)
        srv.start()
        servers.append(srv)
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY=KEY)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def server_params(zap, session: str | None = None) -> Any:
    """`zapcli mcp serve` on stdio with the test's env; without `session`,
    no ZAPCLI_SESSION: the connection makes its own."""
    from mcp import StdioServerParameters

    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    if session:
        env["ZAPCLI_SESSION"] = session
    return StdioServerParameters(command=sys.executable, args=["-m", "zapcli", "mcp", "serve"],
                                 env=env, cwd=str(zap.cwd))


def run(fn: Any, *args: Any) -> Any:
    return anyio.run(fn, *args)


def text(result: Any) -> str:
    assert result.content and result.content[0].type == "text", result
    return str(result.content[0].text)


def bash_script(marker: str, commands: int = 1) -> list[dict[str, Any]]:
    """An agent that runs `commands` bash calls (each asks in `workspace` mode)."""
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {marker}{i} >> out.txt"}}]}
        for i in range(commands)]
    return [{"match": marker, "turns": [*turns, {"text": f"finished {marker}"}]}]
