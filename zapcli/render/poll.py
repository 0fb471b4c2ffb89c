"""`poll`: each subagent's status and folded output, or one summary line
while all of them are still running."""

from __future__ import annotations

from zapcli.render.common import (
    TASK_PREVIEW,
    Lines,
    duration,
    folded_json,
    folded_lines,
    last_line,
    one_line,
    status_phrase,
    task_line,
    view_header,
    view_json,
)
from zapcli.render.diff import stale_line
from zapcli.render.docschema import stamp
from zapcli.render.text import alt, escape_controls
from zapcli.trail.model import Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


def _all_running(res: Any) -> Lines:
    n = len(res.entries)
    tasks = " / ".join(task_line(e.view.task, TASK_PREVIEW) for e in res.entries if e.view)
    # a hang must stay visible in the summary too (docs/explanation/rules.md#status stall)
    # and so must a subagent parked on a rate limit, or held back in the queue for one,
    # or one its cluster has no room for yet
    stalled = [("yellow", f"  {e.view.id}: {status_phrase(e.view)}")
               for e in res.entries if e.view and (e.view.stalled_s is not None or e.view.rate_limit
                                                   or e.view.held or e.view.queued_out_there)]
    queued = sum(1 for e in res.entries if e.view and e.view.status == Status.QUEUED)
    note = f"; {queued} of them queued" if queued else ""
    ids = " ".join(e.id for e in res.entries)
    latest = [("dim", f"  {e.id[-8:]} last wrote: {one_line(line, 100)}") for e in res.entries
              if (line := last_line(e.output)) is not None]
    return [("cyan", f"[SubAgent] {n}/{n} still running (waited {duration(res.waited_s)}{note})"),
            ("", f"  tasks: {tasks}"), ("dim", f"  ids: {ids}"), *latest, *stalled]


def _stderr_lines(e: Any) -> Lines:
    written = e.view.stderr_written or 0
    shown = len(e.stderr_tail.encode("utf-8"))
    how = alt(f"zapcli output {e.id} --stderr", "action output with stderr true")
    more = (f" (last {shown} of {written} bytes; {how} has all)"
            if written > shown else "")
    return [("dim", f"  Stderr{more}:"),
            *(("", "    " + escape_controls(x)) for x in e.stderr_tail.rstrip("\n").split("\n"))]


def _tree_lines(e: Any) -> Lines:
    """The worktree receipt, what the tree holds now, and a moved HEAD."""
    v = e.view
    out: Lines = []
    if v.continue_of:
        out.append(("dim", f"  Continues: {v.continue_of}"))
    if v.continued_by:
        out.append(("dim", f"  Continued as: {v.continued_by}"))
    r = v.worktree
    if not r:
        return out
    out.append(("", f"  Worktree: {r.get('path')} (branch {r.get('branch')}, base "
                    f"{str(r.get('base'))[:12]})"))
    if r.get("error"):
        out.append(("red", f"  Worktree not made: {one_line(str(r['error']), 200)}"))
    t = e.tree
    if t is None:
        if not r.get("ready") and not r.get("error"):
            out.append(("dim", "  Worktree state: not made yet"))
        return out
    if not t["exists"]:
        out.append(("dim", "  Worktree state: removed"))
    else:
        why = f": {', '.join(t['reasons'])}" if t["reasons"] else ""
        out.append(("yellow" if t["holds_work"] else "dim", f"  Worktree state: {t['state']}{why}"))
    stale = stale_line(t, v.id)
    if stale is not None:
        out.append((stale[0], "  " + stale[1]))
    return out


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
        out.extend(_tree_lines(e))
        if e.output is not None:
            out.extend(folded_lines(e.output, so_far=not e.view.terminal, sid=e.id))
        if e.stderr_tail:
            out.extend(_stderr_lines(e))
    return out


def entry_doc(e: Any) -> dict[str, Any]:
    error = {"code": "not_found", "message": e.error} if e.error else None  # as every error
    doc = {"id": e.id, "error": error, **(view_json(e.view) if e.view else {}),
           "output": folded_json(e.output) if e.output else None, "stderr_tail": e.stderr_tail,
           "structured": e.structured}
    if doc.get("worktree") and e.tree is not None:
        doc["worktree"] = {**doc["worktree"], **e.tree}
    return doc


def doc(res: Any) -> dict[str, Any]:
    return stamp("poll", {"waited_s": round(res.waited_s, 3), "all_running": res.all_running,
            "subagents": [entry_doc(e) for e in res.entries]})
