"""`zapcli list`: this session's subagents, newest first."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.cli.render import list_lines, view_json
from zapcli.cli.settings import for_observers
from zapcli.ops.listing import list_subagents


def execute(all: bool = False, status: str | None = None, json: bool = False) -> int:
    session, views = list_subagents(for_observers(), all_sessions=all, status=status)
    if json:
        emit_json({"session": session, "all_sessions": all, "count": len(views),
                   "subagents": [view_json(v) for v in views]})
        return 0
    emit_lines(list_lines(views, all))
    return 0
