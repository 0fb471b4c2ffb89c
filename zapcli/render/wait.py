"""`wait`: one line per awaited subagent, and whether the wait timed out."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines, duration, undelivered_line, view_header, view_json
from zapcli.render.docschema import stamp
from zapcli.render.text import alt

NOTHING = ("[SubAgent] nothing to wait for: no subagent of "
           + alt("this session", "this session", "yours") + " is running or queued ("
           + alt("zapcli list", "action list", "action list") + " shows the finished ones)")
EMPTY = ("[SubAgent] `ids` is empty: nothing to wait for (leave `ids` out to wait for every "
         "subagent of " + alt("this session", "this session", "yours") + " that has not ended; "
         "action list shows them all)")


def capped(cap_s: float, timeout: float | None) -> str:
    """A wait that answered at the caller's cap (an MCP call returns before
    its client gives up), with what is left of the timeout it was given."""
    left = f" with timeout {timeout - cap_s:g}" if timeout is not None and timeout > cap_s else ""
    return (f"[SubAgent] still running after {cap_s:g}s: a wait answers within {cap_s:g} s, "
            f"before MCP clients give up on a call; wait again{left} to go on waiting")


def lines(res: Any) -> Lines:
    if not res.views:
        return [("dim", NOTHING)]
    out: Lines = []
    if res.timed_out:
        out.append(("yellow", f"[SubAgent] wait timed out after {duration(res.waited_s)}"))
    removed = getattr(res, "removed", None) or {}  # id -> when and by what
    for v in res.views:
        head = view_header(v)
        gone = f" ({removed[v.id]})" if v.id in removed else ""
        out.append((head[0][0], "[SubAgent] " + head[0][1] + gone))
        if head[1][1].startswith("  Reason: "):  # a long reason, whole
            out.append(head[1])
        if v.undelivered_messages:  # a message it ended before reading: not lost silently
            out.append(undelivered_line(v))
    return out



def doc(res: Any) -> dict[str, Any]:
    removed = set(getattr(res, "removed", ()))
    return stamp("wait", {"timed_out": res.timed_out, "waited_s": round(res.waited_s, 3),
                          "exit_code": res.exit_code,
                          "subagents": [{**view_json(v), "removed": v.id in removed,
                                         "structured": res.structured(v)} for v in res.views]})
