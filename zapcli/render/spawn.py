"""`spawn`: the new subagent's id, status, backend and task."""

from __future__ import annotations

from typing import Any

from zapcli.money import dollars
from zapcli.render.common import STATUS_STYLE, Lines, task_line
from zapcli.render.docschema import stamp


def lines(res: Any) -> Lines:
    out = [(STATUS_STYLE.get(res.status, ""), f"[SubAgent] {res.id}: {res.status}"),
           ("", f"CLI: {res.cli}" + (f" (agent {res.agent})" if res.agent else "")),
           ("", f"Task: {task_line(res.task, 200)}"),
           ("dim", f"Created: {local_time(res.created)}")]
    given = getattr(res, "budget", None)
    if given:
        parts = ([f"{given['max_tokens']:,} tokens"] if given.get("max_tokens") else []) + \
            ([dollars(given["max_cost"])] if given.get("max_cost") else [])
        if parts:
            out.append(("", f"Budget: {' and '.join(parts)} allotted from its parent's budget "
                            "(what it does not use returns when it ends)"))
    return out


def local_time(stamp: Any) -> str:
    """An ISO timestamp (`…T21:15:05.157585Z`) as people read the others:
    local time to the second, with its zone (`2026-12-06 22:15:05 CET`);
    the JSON document keeps it whole. Unparseable: as it is."""
    from datetime import datetime

    try:
        when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return str(stamp)
    if when.tzinfo is None:
        return when.strftime("%Y-%m-%d %H:%M:%S")
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z").rstrip()


def tool_lines(res: Any) -> Lines:
    """What a model reads: the lines, and each warning after them."""
    return lines(res) + [("", f"Warning: {w}") for w in res.warnings]


def doc(res: Any) -> dict[str, Any]:
    """The `spawn` document (`zapcli/spawn@1`)."""
    return stamp("spawn", record(res))


def record(res: Any) -> dict[str, Any]:
    """One spawned subagent, as `spawn` and `spawn --attempts` show it."""
    return {"id": res.id, "status": res.status, "cli": res.cli, "agent": res.agent,
            "task": res.task, "created": res.created, "warnings": list(res.warnings),
            "budget": getattr(res, "budget", None)}
