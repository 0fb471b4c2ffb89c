"""`zapcli list`: this session's subagents, newest first."""

from __future__ import annotations

from zapcli.cli.hints import other_sessions
from zapcli.cli.output import emit
from zapcli.cli.settings import for_observers
from zapcli.ops.listing import list_subagents
from zapcli.render import listing as render


def execute(all: bool = False, status: str | None = None, json: bool = False) -> int:
    res = list_subagents(for_observers(), all_sessions=all, status=status)
    emit(json, render.doc, render.lines, res)
    if not json and res.active_elsewhere:
        other_sessions(res.session, res.active_elsewhere)
    return 0
