"""Next-step hints on stderr that several commands share.

Imports `zapcli.cli.output`.
"""

from __future__ import annotations

from zapcli.cli.output import note


def other_sessions(session: str, others: int | None) -> None:
    """When this session shows nothing: say if other sessions have subagents
    (a harness that setsid's each command changes session each time)."""
    if others:
        note(f"{others} subagent(s) in other sessions (this one is {session}): "
             "zapcli list --all; set ZAPCLI_SESSION to share one session between commands")
