"""`zapcli kill`: cancel subagents and their whole process trees."""

from __future__ import annotations

from zapcli.cli.output import emit_each, error
from zapcli.cli.settings import for_observers
from zapcli.ops.kill import kill
from zapcli.render import kill as render

GONE = "does not exist"


def execute(ids: list[str] | None = None, grace: float | None = None, all: bool = False,
            json: bool = False) -> int:
    entries = kill(list(ids or []), for_observers(), grace_s=grace, all_=all, runs=True)
    found = [e for e in entries if e.outcome != GONE]
    code = emit_each(json, render.doc, render.lines, entries, found if found or not entries else None,
                     [e.error or f"{e.id} {GONE}" for e in entries if e.outcome == GONE])
    if all and not entries:
        from zapcli.cli.hints import other_sessions
        from zapcli.lifecycle import session
        from zapcli.ops.listing import active_elsewhere

        current = session.current()
        other_sessions(current, active_elsewhere(current))
    for e in found:  # a failure to stop or record is an error of its own, on stderr
        if e.failed:
            error(e.error or f"{e.id}: {e.outcome}")
    return 1 if any(e.failed for e in entries) else code
