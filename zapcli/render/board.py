"""`board`: a session's task board — the list, a claim, a task in full — as
human lines (also what a model reads from its `board` tool) and JSON.

Imports `zapcli.render.common` only: the results are read by their
attributes (`zapcli.team.work` makes them), so the renderer never imports the
room below it.
"""

from __future__ import annotations

import time

from zapcli.render.common import Lines, one_line
from zapcli.render.docschema import stamp
from zapcli.render.text import alt, escape_controls

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RESULT_PREVIEW = 160
DEP_RESULT_CHARS = 2000  # what a claimer reads of each task it waited for


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    from zapcli.trail.records import iso_utc

    return iso_utc(epoch)


def _after(t: Any) -> str:
    return f" (after {', '.join(f't{a}' for a in t.after)})" if t.after else ""


def task_line(t: Any) -> str:
    label = f" [{escape_controls(t.label)}]" if t.label else ""
    if t.needs:
        label += f" (needs {', '.join(t.needs)})"
    if t.state == "claimed":
        head = f"{t.id} claimed by {t.holder_name or t.holder}"
    elif t.state == "done":
        head = f"{t.id} done by {t.done_by or '?'}"
    else:
        head = f"{t.id} open"
    line = f"{head}: {one_line(t.text, 120)}{_after(t)}{label}"
    if t.state == "done" and t.result:
        line += f" — result: {one_line(t.result, RESULT_PREVIEW)}"
    return line


def counts(tasks: list[Any]) -> dict[str, int]:
    out = {"open": 0, "claimed": 0, "done": 0}
    for t in tasks:
        out[t.state] = out.get(t.state, 0) + 1
    return out


def list_lines(res: Any) -> Lines:
    tasks = res.tasks
    if not tasks:
        return [("", "[Board] no tasks on this session's board (" + alt(
            "zapcli board add TEXT", 'action "add"') + " puts one there)")]
    c = counts(tasks)
    out: Lines = [("bold", f"[Board] {len(tasks)} task(s): {c['done']} done, {c['claimed']} "
                           f"claimed, {c['open']} open")]
    style = {"done": "green", "claimed": "cyan", "open": ""}
    for t in tasks:
        out.append((style.get(t.state, ""), task_line(t)))
        if t.state == "open" and t.note:
            out.append(("yellow", f"  note: {one_line(t.note, 200)}"))
    return out


def task_doc(t: Any) -> dict[str, Any]:
    return {"id": t.id, "text": t.text, "label": t.label, "state": t.state,
            "holder": t.holder, "holder_name": t.holder_name, "result": t.result,
            "done_by": t.done_by, "note": t.note, "after": [f"t{a}" for a in t.after],
            "needs": list(t.needs), "fence": t.fence,
            "added_by": t.added_by, "created": _iso(t.created), "updated": _iso(t.updated)}


def list_doc(res: Any) -> dict[str, Any]:
    return stamp("board", {"session": res.session, "counts": counts(res.tasks),
            "tasks": [task_doc(t) for t in res.tasks]})


def _dep_lines(deps: list[Any]) -> Lines:
    out: Lines = []
    for d in deps:
        result = (d.result or "").strip()
        if len(result) > DEP_RESULT_CHARS:
            result = result[:DEP_RESULT_CHARS] + f"… ({len(d.result)} characters; " + alt(
                f"zapcli board show {d.id}", f'action "show", task "{d.id}"') + " shows it all)"
        out.append(("", f"After {d.id} (done by {d.done_by or '?'}): {escape_controls(result)}"))
    return out


def claim_lines(res: Any) -> Lines:
    got = res.claim
    if got.task is None:
        word = "nothing left to claim" if got.finished else "nothing to claim"
        why = got.why.split(": ", 1)[1] if got.why.startswith("nothing to claim now: ") else got.why
        return [("yellow", f"[Board] {word}: {why}")]
    t = got.task
    return [("green", f"[Board] claimed {t.id}: {escape_controls(t.text)}"),
            *_dep_lines(res.deps),
            ("dim", "When it is finished: " + alt(
                f'zapcli board done {t.id} --fence {t.claim} --result "…"',
                'action "done" with your result'))]


def claim_doc(res: Any) -> dict[str, Any]:
    got = res.claim
    return stamp("board-claim", {"session": res.session, "claimed": task_doc(got.task) if got.task else None,
            "reason": got.why or None, "finished": got.finished,
            "after": [task_doc(d) for d in res.deps]})


def changed_lines(res: Any) -> Lines:
    """After add, done, release: the task and what became of it."""
    t = res.task
    if res.verb == "added":
        return [("green", f"[Board] added {t.id}: {one_line(t.text, 200)}{_after(t)}")]
    if res.verb == "done":
        return [("green", f"[Board] {t.id} done")]
    return [("", f"[Board] {t.id} is open again")]


def changed_doc(res: Any) -> dict[str, Any]:
    return stamp("board-change", {"session": res.session, "verb": res.verb, "task": task_doc(res.task)})


def show_lines(res: Any) -> Lines:
    t = res.task
    out: Lines = [("bold", f"[Board] {task_line(t).split(':', 1)[0]}"),
                  ("", f"Task: {escape_controls(t.text)}")]
    if t.after:
        out.append(("", f"After: {', '.join(f't{a}' for a in t.after)}"))
    if t.label:
        out.append(("", f"Label: {escape_controls(t.label)}"))
    if t.needs:
        out.append(("", f"Needs: {', '.join(t.needs)}"))
    if t.fence is not None:
        out.append(("", f"Fence: {t.fence} (the current claim's fencing number)"))
    if t.result:
        out.append(("", f"Result: {escape_controls(t.result)}"))
    for e in t.events:
        when = time.strftime("%H:%M:%S", time.localtime(e["at"]))
        who = f" by {e['who']}" if e.get("who") else ""
        note = f" — {one_line(e['note'], 240)}" if e.get("note") else ""
        out.append(("dim", f"  {when} {e['what']}{who}{note}"))
    return out


def show_doc(res: Any) -> dict[str, Any]:
    t = res.task
    return stamp("board-task", {"session": res.session, "task": task_doc(t),
            "events": [{"at": _iso(e["at"]), "what": e["what"], "who": e.get("who"),
                        "note": e.get("note")} for e in t.events]})
