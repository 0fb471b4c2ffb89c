"""`zapcli tool-schema`: the `subagent` tool's JSON schema, for other agent frameworks."""

from __future__ import annotations

from zapcli.cli.output import emit_json


def execute(json: bool = True) -> int:
    from zapcli.toolapi.schema import tool_schema

    emit_json(tool_schema())
    return 0
