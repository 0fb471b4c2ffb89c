"""`zapcli tool-schema`: the `subagent` tool as another agent framework
declares a tool (`--format openai|responses|anthropic|mcp`)."""

from __future__ import annotations

from zapcli.cli.output import emit_json
from zapcli.errors import UsageError


def execute(format: str = "openai", json: bool = True) -> int:
    from zapcli.toolapi.schema import FORMATS, tool_definition

    if format not in FORMATS:
        raise UsageError(f"unknown --format '{format}'; choose one of: {', '.join(FORMATS)}")
    emit_json(tool_definition(format))
    return 0
