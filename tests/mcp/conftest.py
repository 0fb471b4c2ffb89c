"""What the MCP tests share: a scripted chat model for agent subagents, the
environment `zapcli mcp serve` runs with, and a way to drive the official
SDK client from a synchronous test (`run(async_fn)`)."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio


def server_params(zap, session: str | None = None) -> Any:
    """`zapcli mcp serve` on stdio with the test's env; without `session`,
    no ZAPCLI_SESSION: the connection makes its own."""
    from mcp import StdioServerParameters

    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    if session:
        env["ZAPCLI_SESSION"] = session
    return StdioServerParameters(command=sys.executable, args=["-m", "zapcli", "mcp", "serve"],
                                 env=env, cwd=str(zap.cwd))


def http_client(url: str, token: str | None, **kw: Any) -> Any:
    """The SDK client over streamable HTTP, sending `Authorization: Bearer
    token` (none when `token` is None), as Claude Code's `--header` does."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)),
                  **kw)


def token_of(zap, port: int) -> str:
    """The token `zapcli mcp serve --http` wrote for `port` (0600, in the state folder)."""
    from tests.conftest import wait_until

    path = zap.home / "mcp" / f"http-{port}.token"
    wait_until(path.exists, 30)
    return path.read_text().strip()


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


def tool_result_text(request: dict[str, Any]) -> str:
    """The text of the tool results in an Anthropic Messages request's last user message."""
    messages = request.get("messages") or []
    out: list[str] = []
    for block in (messages[-1].get("content") if messages else None) or []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out += [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    # Claude Code sends a result's structuredContent as JSON text: read its `text`
    for i, piece in enumerate(out):
        if piece.startswith("{"):
            try:
                out[i] = str(json.loads(piece).get("text", piece))
            except ValueError:
                pass
    return "\n".join(out)
