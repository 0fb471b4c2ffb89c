"""The MCP tools and results, generated from the declaration.

Imports `mcp_types` and `zapcli.toolapi`. Each action is one tool with its
own input schema, annotations (read-only, destructive) and one output schema
shared by all: `structuredContent` is a COMPACT document — the text itself
plus a few key fields (ids, statuses, exit code) — not the CLI's full JSON
document. Claude Code 2.1.328 shows its model `structuredContent` instead of
the text whenever a result has it (measured, with and without an output
schema), so the full document (a poll of one subagent is ~4x its text) would
be what the model reads; with the compact one the model reads the same text
either way, and a program still gets the fields without parsing text.
The full document is what `zapcli call --json` and `zapcli <command> --json`
print.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from zapcli.toolapi.dispatch import Reply
from zapcli.toolapi.schema import action_schema
from zapcli.toolapi.spec import ACTIONS, Action

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The result as the CLI prints it (the same as "
                                                  "the text content)."},
        "exit_code": {"type": "integer", "description": "The matching CLI command's exit code."},
        "error": {"type": ["string", "null"], "description": "The error's stable code, if it failed."},
        "id": {"type": "string"},
        "status": {"type": "string"},
        "timed_out": {"type": "boolean"},
        "still_running": {"type": "boolean", "description": "The call answered at the server's "
                                                            "cap (40 s): call it again to go on."},
        "subagents": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["text", "exit_code"],
}
_KEYS = ("id", "status", "timed_out", "still_running")
_ENTRY_KEYS = ("id", "status", "exit_code", "outcome", "error", "pending_approval")


def tool(action: Action) -> types.Tool:
    return types.Tool(
        name=action.name, description=action.description, input_schema=action_schema(action),
        output_schema=OUTPUT_SCHEMA,
        annotations=types.ToolAnnotations(
            title=f"zapcli {action.command}", read_only_hint=action.read_only,
            destructive_hint=action.destructive if not action.read_only else None,
            idempotent_hint=action.read_only, open_world_hint=False))


TOOLS = [tool(a) for a in ACTIONS]


def _entry(e: Any) -> Any:
    if not isinstance(e, dict):
        return e
    out = {k: e[k] for k in _ENTRY_KEYS if e.get(k) is not None}
    if isinstance(out.get("pending_approval"), dict):
        req = out["pending_approval"]
        out["pending_approval"] = {k: req.get(k) for k in ("req_id", "tool", "summary")}
    return out


def compact(reply: Reply) -> dict[str, Any]:
    """The structured content: the text, the exit code, and key fields of the
    full document."""
    out: dict[str, Any] = {"text": reply.text, "exit_code": reply.exit_code,
                           "error": reply.code or None}
    doc = reply.doc if isinstance(reply.doc, dict) else {}
    out.update({k: doc[k] for k in _KEYS if isinstance(doc.get(k), (str, bool))})
    entries = doc.get("subagents")
    if isinstance(entries, list):
        out["subagents"] = [_entry(e) for e in entries]
    return out


def result(reply: Reply) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=reply.text)],
                                structured_content=compact(reply),
                                is_error=reply.error or reply.exit_code == 1)  # an unknown id too
