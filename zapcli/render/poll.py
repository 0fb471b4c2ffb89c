"""`poll`: each subagent's status and folded output, or one summary line
while all of them are still running."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import (
    TASK_PREVIEW,
    Lines,
    duration,
    folded_json,
    folded_lines,
    one_line,
    status_phrase,
    view_header,
    view_json,
)
from zapcli.render.text import alt, escape_controls


def _all_running(res: Any) -> Lines:
    n = len(res.entries)
    tasks = " / ".join(one_line(e.view.task, TASK_PREVIEW) for e in res.entries if e.view)
    # a hang must stay visible in the summary too (SPEC §6.2 stall)
    stalled = [("yellow", f"  {e.view.id}: {status_phrase(e.view)}")
               for e in res.entries if e.view and e.view.stalled_s is not None]
    queued = sum(1 for e in res.entries if e.view and e.view.status == "queued")
    note = f"; {queued} of them queued" if queued else ""
    ids = " ".join(e.id for e in res.entries)
    return [("cyan", f"[SubAgent] {n}/{n} still running (waited {duration(res.waited_s)}{note})"),
            ("", f"  tasks: {tasks}"), ("dim", f"  ids: {ids}"), *stalled]


def _stderr_lines(e: Any) -> Lines:
    written = e.view.stderr_written or 0
    shown = len(e.stderr_tail.encode("utf-8"))
    how = alt(f"zapcli output {e.id} --stderr", "action output with stderr true")
    more = (f" (last {shown} of {written} bytes; {how} has all)"
            if written > shown else "")
    return [("dim", f"  Stderr{more}:"),
            *(("", "    " + escape_controls(x)) for x in e.stderr_tail.rstrip("\n").split("\n"))]


def lines(res: Any) -> Lines:
    if res.all_running:
        return _all_running(res)
    out: Lines = []
    for e in res.entries:
        if out:
            out.append(("", ""))
        if e.view is None:
            out.append(("red", f"[SubAgent] {one_line(e.error or '', 200)}"))
            continue
        head = view_header(e.view)
        out.append((head[0][0], "[SubAgent] " + head[0][1]))
        out.extend(head[1:])
        if e.output is not None:
            out.extend(folded_lines(e.output, so_far=not e.view.terminal))
        if e.stderr_tail:
            out.extend(_stderr_lines(e))
    return out


def entry_doc(e: Any) -> dict[str, Any]:
    return {"id": e.id, "error": e.error, **(view_json(e.view) if e.view else {}),
            "output": folded_json(e.output) if e.output else None, "stderr_tail": e.stderr_tail}


def doc(res: Any) -> dict[str, Any]:
    return {"waited_s": round(res.waited_s, 3), "all_running": res.all_running,
            "subagents": [entry_doc(e) for e in res.entries]}
