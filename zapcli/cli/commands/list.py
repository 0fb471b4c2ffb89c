"""`zapcli list`: this session's subagents, newest first."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.cli.render import view_header, view_json
from zapcli.config import load_settings
from zapcli.ops.listing import list_subagents


def execute(all: bool = False, status: str | None = None, json: bool = False) -> int:
    session, views = list_subagents(load_settings(), all_sessions=all, status=status)
    if json:
        emit_json({"session": session, "all_sessions": all, "count": len(views),
                   "subagents": [view_json(v) for v in views]})
        return 0
    where = "across all sessions" if all else "in this session"
    noun = "subagent" if len(views) == 1 else "subagents"
    lines: list[tuple[str, str]] = [("bold", f"[SubAgent] {len(views)} {noun} {where}")]
    for v in views:
        lines.append(("", ""))
        lines.extend(view_header(v))
    emit_lines(lines)
    return 0
