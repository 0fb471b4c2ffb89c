"""`wait`: one line per awaited subagent, and whether the wait timed out."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines, duration, view_header, view_json
from zapcli.render.text import alt

NOTHING = ("[SubAgent] nothing to wait for: no subagent of "
           + alt("this session", "this session", "yours") + " is running or queued ("
           + alt("zapcli list", "action list", "action list") + " shows the finished ones)")


def lines(res: Any) -> Lines:
    if not res.views:
        return [("dim", NOTHING)]
    out: Lines = []
    if res.timed_out:
        out.append(("yellow", f"[SubAgent] wait timed out after {duration(res.waited_s)}"))
    for v in res.views:
        head = view_header(v)
        out.append((head[0][0], "[SubAgent] " + head[0][1]))
    return out


def doc(res: Any) -> dict[str, Any]:
    return {"timed_out": res.timed_out, "waited_s": round(res.waited_s, 3),
            "exit_code": res.exit_code, "subagents": [view_json(v) for v in res.views]}
