"""`zapcli kill`: cancel subagents and their whole process trees."""

from __future__ import annotations

from zapcli.cli.output import emit, error, missing_ids_exit
from zapcli.cli.settings import for_observers
from zapcli.ops.kill import kill
from zapcli.render import kill as render


def execute(ids: list[str] | None = None, grace: float | None = None, all: bool = False,
            json: bool = False) -> int:
    entries = kill(list(ids or []), for_observers(), grace_s=grace, all_=all)
    emit(json, render.doc, render.lines, entries)
    if all and not entries:
        from zapcli.cli.hints import other_sessions
        from zapcli.lifecycle import session
        from zapcli.ops.listing import active_elsewhere

        current = session.current()
        other_sessions(current, active_elsewhere(current))
    for e in entries:  # a failure to stop or record is an error of its own, on stderr
        if e.failed and e.outcome != "does not exist" and not json:
            error(e.error or f"{e.id}: {e.outcome}")
    return missing_ids_exit([e.error or f"{e.id} does not exist" for e in entries
                             if e.failed], json)
