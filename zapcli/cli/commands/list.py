"""`zapcli list`: this session's subagents, newest first."""

from __future__ import annotations

from zapcli.cli.hints import other_sessions
from zapcli.cli.output import emit_json, emit_lines
from zapcli.cli.render import list_lines, view_json
from zapcli.cli.settings import for_observers
from zapcli.ops.listing import list_subagents


def execute(all: bool = False, status: str | None = None, json: bool = False) -> int:
    session, views = list_subagents(for_observers(), all_sessions=all, status=status)
    if json:
        doc = {"session": session, "all_sessions": all, "count": len(views),
               "subagents": [view_json(v) for v in views]}
        doc["active_in_other_sessions"] = None  # counted only when this session shows nothing
        if not all and not views:
            from zapcli.ops.listing import active_elsewhere

            doc["active_in_other_sessions"] = active_elsewhere(session)
        emit_json(doc)
        return 0
    emit_lines(list_lines(views, all))
    if not all and not views:
        other_sessions(session)
    return 0

