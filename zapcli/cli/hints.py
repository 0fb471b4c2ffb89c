"""Next-step hints on stderr that several commands share.

Imports `zapcli.cli.output`, `zapcli.render.listing` (the words a tool says too),
`zapcli.lifecycle.session` (whether the session was named).
"""

from __future__ import annotations

from zapcli.cli.output import note
from zapcli.render.listing import elsewhere
from zapcli.render.text import spell


def other_sessions(session: str, others: int | None) -> None:
    """When this session shows nothing: say if other sessions have subagents
    (a harness that setsid's each command changes session each time)."""
    if others:
        from zapcli.lifecycle.session import named

        note(spell(elsewhere(session, others, named()), "cli"))
