"""`zapcli kill`: cancel subagents and their whole process trees."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines, missing_ids_exit
from zapcli.cli.render import kill_lines
from zapcli.cli.settings import for_observers
from zapcli.ops.kill import FAILED, kill


def execute(ids: list[str] | None = None, grace: float | None = None, all: bool = False,
            json: bool = False) -> int:
    entries = kill(list(ids or []), for_observers(), grace_s=grace, all_=all)
    if json:
        emit_json({"subagents": [{"id": e.id, "outcome": e.outcome, "pid": e.pid, "signals": e.signals,
                                  "error": e.error} for e in entries]})
    else:
        emit_lines(kill_lines(entries))
    if all and not entries:
        from zapcli.cli.hints import other_sessions
        from zapcli.lifecycle import session

        other_sessions(session.current())
    return missing_ids_exit([e.error or f"{e.id} does not exist" for e in entries
                             if e.outcome in FAILED])
