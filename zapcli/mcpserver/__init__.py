"""`zapcli mcp serve`: zapcli's tools over MCP (docs/explanation/rules.md#tool-surfaces), the official `mcp` SDK.

`tools` turns the declaration (`zapcli.toolapi.spec`) into MCP tools and call
results; `server` builds the low-level SDK server (one session per
connection, progress while poll/wait block, approvals forwarded as
elicitations) and serves it on stdio or streamable HTTP; `team` is the
server an agent-CLI subagent with `team: true` gets in its private config
(the board and message tools of its own session, nothing else). This room
is the only one that imports `mcp`, and only `zapcli mcp serve` and those
subagents' CLIs (`python -m zapcli.mcpserver.team`) import this room.
"""
