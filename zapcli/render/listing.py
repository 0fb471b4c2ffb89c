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
    task_line,
    view_header,
    view_json,
)
from zapcli.render.docschema import stamp
from zapcli.render.text import alt
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


def short_status(v: Any, waiting: str | None = None) -> str:
    """`running 23s`, `completed 45s`, `failed 3.0s exit 2`, `queued (after
    3f9a0c1e)`: a queued one with what it waits for (`lifecycle.waiting`),
    one stopped by its account's usage limit with the reset."""
    if v.status == Status.QUEUED:
        return f"queued ({waiting})" if waiting else "queued"
    if v.status == Status.RUNNING and getattr(v, "rate_limit", None):
        from zapcli.render.common import rate_limited

        return f"running ({rate_limited(v)})"
    if v.stalled_s is not None:
        return f"running stalled {duration(v.stalled_s)}"
    text = f"{v.status} {duration(v.elapsed_s)}" if v.elapsed_s is not None else str(v.status)
    if v.terminal and v.exit_code not in (None, 0):
        text += f" exit {v.exit_code}"
    if getattr(v, "usage_limit", None):
        from zapcli.render.common import usage_limit_text

        text += f" ({usage_limit_text(v.usage_limit)})"
    return text


SESSION_WIDTH = 24  # a longer session name is cut (list --json has it whole)


def table(views: list[Any], width: int | None = None, *, sessions: bool = False,
          waiting: dict[str, str] | None = None) -> Lines:
    """The compact rows: id tail, status, (`sessions`: the session,) backend/
    agent, task (cut to `width`)."""
    width = width or _width()
    rows = [(v.id[-8:], short_status(v, (waiting or {}).get(v.id)),
             one_line(v.session, SESSION_WIDTH) if sessions else "",
             v.cli + (f"/{v.agent}" if v.agent else ""), v) for v in views]
    w_status = max([len("STATUS"), *(len(r[1]) for r in rows)])
    w_session = max([len("SESSION"), *(len(r[2]) for r in rows)]) if sessions else 0
    w_cli = max([len("CLI"), *(len(r[3]) for r in rows)])
    task_room = max(width - 8 - w_status - (w_session + 2 if sessions else 0) - w_cli - 6, 20)

    def row(tail: str, status: str, session: str, cli: str) -> str:
        middle = f"{session:<{w_session}}  " if sessions else ""
        return f"{tail:<8}  {status:<{w_status}}  {middle}{cli:<{w_cli}}  "

    out: Lines = [("dim", row("ID", "STATUS", "SESSION", "CLI") + "TASK")]
    for tail, status, session, cli, v in rows:
        out.append((STATUS_STYLE.get(v.status, ""),
                    row(tail, status, session, cli) + task_line(v.task, task_room)))
        if v.pending_approval:
            req = v.pending_approval
            asks = one_line(str(req.get("summary", "")), task_room)
            decide = (f"zapcli approve {tail} | zapcli deny {tail}" if not asks.endswith("…") else
                      f"cut here: zapcli poll {tail} shows it whole before you approve")
            out.append(("magenta", f"{'':8}  ↳ asks: {asks} ({decide})"))
        if v.undelivered_messages:
            out.append(("yellow", f"{'':8}  ↳ not delivered: {v.undelivered_messages} message(s), "
                                  f"it ended first (" + alt(f"zapcli continue {tail} TEXT carries on",
                                                            "action spawn with them starts anew") + ")"))
    return out


def lines(res: Any) -> Lines:
    where = "across all sessions" if res.all_sessions else "in this session"
    total = len(res.views) + res.more
    noun = "subagent" if total == 1 else "subagents"
    status = getattr(res, "status", None)  # `--status`: only those were counted
    if status:
        where += " with status " + (status if isinstance(status, str) else " or ".join(status))
    out: Lines = [("bold", f"[SubAgent] {total} {noun} {where}"
                           + (f", newest {len(res.views)} shown" if res.more else ""))]
    if res.long:
        for v in res.views:
            out.append(("", ""))
            out.extend(view_header(v))
    elif res.views:
        out.extend(table(res.views, sessions=res.all_sessions, waiting=res.waiting))
    if res.more:
        out.append(("dim", f"… {res.more} more (--limit N shows N, --limit 0 all)"))
    for sid, why in (res.damaged or {}).items():
        out.append(("red", f"{sid[-8:]:<8}  damaged  {one_line(why, 300)}"))
    return out


def elsewhere(session: str, others: int, named: bool = False) -> str:
    """What to say when this session shows nothing but others have
    subagents: a harness that starts each command in a new session, or an MCP
    connection (each is its own session), is often not where the caller thinks.
    A session named with ZAPCLI_SESSION (`named`) is said by its name: it is
    no terminal's own."""
    noun = "subagent" if others == 1 else "subagents"
    if named:
        import shlex

        return (f"{others} {noun} in other sessions (this one is {session}, named by "
                "ZAPCLI_SESSION): " + alt(
                    "zapcli list --all shows them; every terminal and script with "
                    f"ZAPCLI_SESSION={shlex.quote(session)} shares this one",
                    "action list with all: true shows them (ZAPCLI_SESSION names this "
                    "session, for every connection of a server); ids work from any session"))
    return (f"{others} {noun} in other sessions (this one is {session}): "
            + alt("zapcli list --all shows them; each terminal is a session of its own — set "
                  "ZAPCLI_SESSION=NAME to share one between terminals and scripts",
                  "action list with all: true shows them (each MCP connection is its own "
                  "session unless the server has ZAPCLI_SESSION set); ids work from any session"))


def doc(res: Any) -> dict[str, Any]:
    return stamp("list", {"session": res.session, "all_sessions": res.all_sessions, "count": len(res.views),
            "more": res.more,
            "subagents": [{**view_json(v), "waiting_for": (res.waiting or {}).get(v.id)}
                          for v in res.views],
            # counted only when this session shows nothing
            "in_other_sessions": res.in_other_sessions,
            "active_in_other_sessions": res.active_elsewhere,
            "damaged": [{"id": sid, "message": why} for sid, why in (res.damaged or {}).items()]})
