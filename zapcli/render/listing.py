"""`list`: a compact table, newest first (one line per subagent, the task
cut to the width); `--long`: the four-line blocks."""

from __future__ import annotations

import os
import sys

from zapcli.render.common import (
    STATUS_STYLE,
    Lines,
    duration,
    one_line,
    view_header,
    view_json,
)
from zapcli.trail.model import Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


def _width() -> int:
    """`shutil.get_terminal_size((100, 24)).columns`, at least 60, without
    importing shutil (~2 ms: it imports bz2, lzma, fnmatch)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 100  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 100
    return max(columns, 60)


def short_status(v: Any) -> str:
    """`running 23s`, `completed 45s`, `failed 3.0s exit 2`, `queued`."""
    if v.status == Status.QUEUED:
        from zapcli.render.common import held_reason

        held = held_reason(v)
        return f"queued ({held})" if held else "queued"
    if v.status == Status.RUNNING and getattr(v, "rate_limit", None):
        from zapcli.render.common import rate_limited

        return f"running ({rate_limited(v)})"
    if v.stalled_s is not None:
        return f"running stalled {duration(v.stalled_s)}"
    text = f"{v.status} {duration(v.elapsed_s)}" if v.elapsed_s is not None else str(v.status)
    if v.terminal and v.exit_code not in (None, 0):
        text += f" exit {v.exit_code}"
    return text


def table(views: list[Any], width: int | None = None) -> Lines:
    """The compact rows: id tail, status, backend/agent, task (cut to `width`)."""
    width = width or _width()
    rows = [(v.id[-8:], short_status(v), v.cli + (f"/{v.agent}" if v.agent else ""), v)
            for v in views]
    w_status = max([len("STATUS"), *(len(r[1]) for r in rows)])
    w_cli = max([len("CLI"), *(len(r[2]) for r in rows)])
    task_room = max(width - 8 - w_status - w_cli - 6, 20)
    out: Lines = [("dim", f"{'ID':<8}  {'STATUS':<{w_status}}  {'CLI':<{w_cli}}  TASK")]
    for tail, status, cli, v in rows:
        out.append((STATUS_STYLE.get(v.status, ""),
                    f"{tail:<8}  {status:<{w_status}}  {cli:<{w_cli}}  {one_line(v.task, task_room)}"))
        if v.pending_approval:
            req = v.pending_approval
            out.append(("magenta", f"{'':8}  ↳ asks: "
                                   f"{one_line(str(req.get('summary', '')), task_room)} "
                                   f"(zapcli approve {tail} | zapcli deny {tail})"))
    return out


def lines(res: Any) -> Lines:
    where = "across all sessions" if res.all_sessions else "in this session"
    total = len(res.views) + res.more
    noun = "subagent" if total == 1 else "subagents"
    out: Lines = [("bold", f"[SubAgent] {total} {noun} {where}"
                           + (f", newest {len(res.views)} shown" if res.more else ""))]
    if res.long:
        for v in res.views:
            out.append(("", ""))
            out.extend(view_header(v))
    elif res.views:
        out.extend(table(res.views))
    if res.more:
        out.append(("dim", f"… {res.more} more (--limit N shows N, --limit 0 all)"))
    for sid, why in (res.damaged or {}).items():
        out.append(("red", f"{sid[-8:]:<8}  damaged  {one_line(why, 300)}"))
    return out


def doc(res: Any) -> dict[str, Any]:
    return {"session": res.session, "all_sessions": res.all_sessions, "count": len(res.views),
            "more": res.more, "subagents": [view_json(v) for v in res.views],
            # counted only when this session shows nothing
            "in_other_sessions": res.in_other_sessions,
            "active_in_other_sessions": res.active_elsewhere,
            "damaged": [{"id": sid, "message": why} for sid, why in (res.damaged or {}).items()]}
