"""Reading the removal notes (`<state>/removed/<id>.json`, written by
`zapcli.lifecycle.removed` before `rm`, `clean` or `gc` delete a
subagent's files), and the one way every command says an id whose files
are gone: "ID does not exist: removed 2026-12-07 09:41:03 UTC by rm, clean
or gc; it had ended: completed" (`missing`); `wait`, which counts such an id by
the end it had, says the same words (`said`).

Imports `zapcli.ids`, `zapcli.paths`, `zapcli.boundedread`, `zapcli.trail.jsonl`,
`zapcli.trail.model` (the status words).
"""

from __future__ import annotations

import time
from pathlib import Path

from zapcli import ids
from zapcli.paths import state_dir
from zapcli.trail import jsonl
from zapcli.trail.model import Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

NOTE_MAX_BYTES = 16 * 1024  # a note is a few hundred bytes; a bigger file is not ours
SUFFIX = ".json"
BY = "by rm, clean or gc"


def folder() -> Path:
    return state_dir() / "removed"


def path(sid: str) -> Path | None:
    """The note of `sid`; None for what is not a whole id (no path is built)."""
    return folder() / f"{sid}{SUFFIX}" if ids.is_valid(sid) else None


def read(sid: str) -> dict[str, Any] | None:
    """The note of `sid` as written, or None (no note, not ours, unreadable)."""
    from zapcli.boundedread import read_at_most

    where = path(sid)
    if where is None:
        return None
    try:
        data = read_at_most(where, NOTE_MAX_BYTES)
        doc = jsonl.loads(data) if len(data) <= NOTE_MAX_BYTES else None
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("id") == sid else None


def said(sid: str, doc: dict[str, Any] | None = None) -> str | None:
    """`removed 2026-12-07 09:41:03 UTC by rm, clean or gc`, from its note
    (`doc`: read already); None when no note says it was removed."""
    doc = read(sid) if doc is None else doc
    if doc is None:
        return None
    when = doc.get("removed")
    if isinstance(when, (int, float)) and not isinstance(when, bool) and 0 < when < 1e11:
        return f"removed {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(when))} {BY}"
    return f"removed {BY}"


def gone(sid: str) -> str | None:
    """`removed 2026-12-07 09:41:03 UTC by rm, clean or gc; it had ended:
    completed` (or `; before it ended`); None when no note says it was removed."""
    doc = read(sid)
    words = said(sid, doc)
    if doc is None or words is None:
        return None
    status = Status.parse(doc.get("status"))
    return words + (f"; it had ended: {status}" if status is not None and status.terminal
                    else "; before it ended")


def missing(sid: str) -> str:
    """What every command says of an id it looked up and did not find:
    `ID does not exist`, and when a note says so, when it was removed and
    how it had ended."""
    words = gone(sid)
    return f"{sid} does not exist" + (f": {words}" if words else "")
