"""C27: a subagent that ends while its own subagents still run says so.

Imports `zapcli.lifecycle` (the session's active members, observe) and
`zapcli.trail`. Found among its session's members not yet seen ended (a
directory listing), those whose spawn record names it as their `parent`
(none, by one file's absence, when no spawn ever named it):
their ids go into its terminal status (`pending`), which poll shows and a
`zapcli run` reads to take them over, so their results reach the next live
ancestor. Their own descendants are theirs to name.
"""

from __future__ import annotations

from zapcli.errors import NotFound


def still_running(sid: str, session: str) -> list[str]:
    """The ids of `sid`'s own subagents that have not ended, oldest first."""
    from zapcli.lifecycle import session as sessions
    from zapcli.trail import reader, store

    out: list[str] = []
    # never named as a parent: no trail to read (a process that loaded the session module
    # before an upgrade put this one in place asks the trails)
    had = getattr(sessions, "had_children", None)
    if had is not None and not had(session, sid):
        return out
    for other in sessions.active(session):
        if other == sid:
            continue
        try:
            spawn = reader.spawn_of(store.path_for(other))
            if spawn is None or spawn.raw.get("parent") != sid:
                continue
            from zapcli.lifecycle.observe import observe  # only for its own: most have none

            if not observe(other).terminal:
                out.append(other)
        except (NotFound, OSError):
            continue
    return out


def say(ids: list[str]) -> str:
    return f"{len(ids)} subagent{'s' if len(ids) != 1 else ''} still running: {', '.join(ids)}"
