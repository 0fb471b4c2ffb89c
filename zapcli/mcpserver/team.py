"""zapcli's team MCP server: the `board` and `message` tools for ONE agent-CLI
subagent (docs/explanation/rules.md#fleets-traces-teams), put into its private MCP config when its definition
declares `team: true` (`zapcli.backends.cli_request`). Run by the CLI as
`python -m zapcli.mcpserver.team --id ID`.

Imports `mcp`, `mcp_types`, `anyio`, `zapcli.mcpserver.eras` (both protocol
eras on one connection), `zapcli.team` (the tools and whose call it is). The caller is the subagent the server was started for, read from
its frozen spawn record: its own session's board and siblings, nothing
else — no spawn, no poll, no other session (delegation does not nest). An
agent CLI cannot be handed a message between its model calls, so each answer
carries the messages waiting for it (recorded as delivered).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel.server import Server

from zapcli import __version__
from zapcli.mcpserver import eras
from zapcli.team import tools
from zapcli.team.who import Caller, of_subagent

NAME = "zapcli_team"
INSTRUCTIONS = ("The task board and messages of your zapcli session: claim a task, do it, mark it "
                "done with your result; message your sibling subagents by id or name.")


def _tools() -> list[types.Tool]:
    return [types.Tool(name=tools.BOARD, description=tools.BOARD_DESCRIPTION,
                       input_schema=tools.BOARD_SCHEMA,
                       annotations=types.ToolAnnotations(title="zapcli board", open_world_hint=False)),
            types.Tool(name=tools.MESSAGE, description=tools.MESSAGE_DESCRIPTION,
                       input_schema=tools.MESSAGE_SCHEMA,
                       annotations=types.ToolAnnotations(title="zapcli message",
                                                         open_world_hint=False))]


def build(caller: Caller) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments if isinstance(params.arguments, dict) else {}
        try:
            ok, text = await anyio.to_thread.run_sync(
                lambda: tools.answer(caller, params.name, args, inbox=True), abandon_on_cancel=True)
        except Exception as exc:  # noqa: BLE001 - the server answers; it never crashes on input
            ok, text = False, f"internal error: {type(exc).__name__}: {exc}"
        return types.CallToolResult(content=[types.TextContent(text=text or "(nothing)")],
                                    is_error=not ok)

    return eras.install(Server(NAME, version=__version__, instructions=INSTRUCTIONS,
                               on_list_tools=list_tools, on_call_tool=call_tool))


async def serve(caller: Caller) -> None:
    from mcp.server.stdio import stdio_server

    server = build(caller)
    async with stdio_server() as (read, write):
        await eras.serve_stdio(server, read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zapcli-team-server")
    parser.add_argument("--id", required=True)
    args = parser.parse_args(argv)
    caller = of_subagent(args.id) if args.id.startswith("sa_") else None
    if caller is None:
        sys.stderr.write(f"zapcli team server: {args.id!r} is not a subagent here\n")
        return 2
    try:
        anyio.run(serve, caller)
    except (BrokenPipeError, EOFError, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    from zapcli import keyguard

    keyguard.seal()  # started by an agent CLI with its environment: no key stays in our block
    raise SystemExit(main())
