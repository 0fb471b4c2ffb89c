"""`list`: this session's (or every session's) subagents, newest first."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines, view_header, view_json


def lines(res: Any) -> Lines:
    where = "across all sessions" if res.all_sessions else "in this session"
    noun = "subagent" if len(res.views) == 1 else "subagents"
    out: Lines = [("bold", f"[SubAgent] {len(res.views)} {noun} {where}")]
    for v in res.views:
        out.append(("", ""))
        out.extend(view_header(v))
    return out


def doc(res: Any) -> dict[str, Any]:
    return {"session": res.session, "all_sessions": res.all_sessions, "count": len(res.views),
            "subagents": [view_json(v) for v in res.views],
            # counted only when this session shows nothing
            "active_in_other_sessions": res.active_elsewhere}
