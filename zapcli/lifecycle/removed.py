"""What became of removed subagents: one small note per subagent that `rm`,
`clean` or `gc` removed (`<state>/removed/<id>.json`), holding the end it had.

Imports `zapcli.lifecycle.status`, `zapcli.paths`, `zapcli.trail` (the JSON
of trail lines, the status words, the notes' reading: `trail.removals`, which
also says such an id the one way every command says it). A `wait` given an
id whose files are gone — removed while the wait ran in another terminal, or
before the wait began — counts it by that end instead of failing with "does
not exist" (`end_of`); one whose files went before it ended (a damaged trail
`rm` removed, files deleted by hand) is said as such (`unfinished`). The
note is written before the files go (`lifecycle.retention.delete_files`), so
a waiter never finds neither. Notes are kept `KEPT_S` (a week) and swept by
retention (`sweep`); everything else about the subagent is gone with it.
"""

from __future__ import annotations

import os
import time

from zapcli.lifecycle.status import View
from zapcli.paths import write_private
from zapcli.trail import jsonl, removals
from zapcli.trail.model import Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

KEPT_S = 7 * 86400.0
TASK_BYTES = 1024  # of the task, enough to say which one it was
UNFINISHED = "removed before it ended (its files were removed: rm of a damaged trail, or by hand)"
# the View fields a note keeps: how it ended, and enough to say which one it was
_KEPT = ("status", "session", "cli", "agent", "task", "created", "reason", "exit_code",
         "elapsed_s", "ended", "input_tokens", "output_tokens", "cached_tokens", "cost_usd",
         "calls", "parent")
_NUMBER = (int, float)
_TYPED: dict[str, Any] = {"reason": str, "exit_code": int, "elapsed_s": _NUMBER, "ended": str,
                          "input_tokens": int, "output_tokens": int, "cached_tokens": int,
                          "cost_usd": _NUMBER, "calls": int, "parent": str}
TEMP_S = 60.0  # a note's temp file left by a process that died writing it


folder = removals.folder


def note(sid: str, view: View | None) -> None:
    """Note that `sid` is being removed, with the end `view` shows (None, or
    a view that has not ended: removed before its end was known). Best
    effort: a note that cannot be written never keeps the files."""
    path = removals.path(sid)
    if path is None:
        return
    doc: dict[str, Any] = {"id": sid, "removed": time.time()}
    if view is not None:
        doc.update({k: getattr(view, k) for k in _KEPT})
        doc["status"] = str(view.status)
        task = view.task.encode("utf-8", "replace")
        if len(task) > TASK_BYTES:
            doc["task"] = task[:TASK_BYTES].decode("utf-8", "ignore") + "…"
    try:
        write_private(path, jsonl.dumps(doc), sync=False)
    except OSError:
        pass


def end_of(sid: str) -> View | None:
    """The view of a removed subagent as it ended (`removed` views: an end
    that was never recorded is `unfinished`); None when no note says it was
    removed."""
    doc = removals.read(sid)
    if doc is None:
        return None
    status = Status.parse(doc.get("status"))
    view = View(id=sid, status=status or Status.LOST, session=_str(doc.get("session")),
                cli=_str(doc.get("cli")), agent=_opt(doc.get("agent")),
                task=_str(doc.get("task")), created=_str(doc.get("created")))
    for key, kind in _TYPED.items():
        value = doc.get(key)
        if isinstance(value, kind) and not isinstance(value, bool):
            setattr(view, key, value)
    if status is None or not status.terminal:
        return unfinished(view)
    return view


def unfinished(last: View) -> View:
    """A subagent whose files went before it ended, as it was last seen: it
    counts as not completed (`lost`), saying why."""
    from zapcli.plain import replace

    return replace(last, status=Status.LOST, reason=UNFINISHED, pending_approval=None,
                   stalled_s=None)


def sweep(now: float | None = None) -> int:
    """Remove notes older than KEPT_S; how many went."""
    now = time.time() if now is None else now
    try:
        names = os.listdir(folder())
    except OSError:
        return 0
    gone = 0
    for name in names:
        path = folder() / name
        try:
            age = now - os.stat(path, follow_symlinks=False).st_mtime
        except OSError:
            continue
        if age > KEPT_S or (name.startswith(".") and age > TEMP_S):
            try:
                path.unlink()
                gone += 1
            except OSError:
                continue
    return gone


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _opt(value: object) -> str | None:
    return value if isinstance(value, str) else None
