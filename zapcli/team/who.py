"""Whose call it is, for the board and messages (SPEC §20): the session the
board belongs to and the holder a claim is made for.

Imports `zapcli.trail` (a subagent's frozen spawn record), `zapcli.lifecycle.session`.
Inside a subagent (`ZAPCLI_SUBAGENT_ID` in its work's environment, or the
id a team tool is built for) the session is the one its spawn record names —
never what the environment says, so a subagent reaches only its own
session's board and siblings — and the holder is the subagent, whose claims
go back to the board when it ends. A `zapcli run` (its own board tool) holds
as its run id. Anyone else is the session's person (`you`): their claims
stay until `done` or `board release`.
"""

from __future__ import annotations

import os

from zapcli.plain import plain

USER = "you"


@plain
class Caller:
    session: str
    holder: str  # a subagent id, a run id, or USER
    label: str  # how others read the holder: "sa_… (worker, claude)"
    subagent: str | None = None  # set when the caller is a subagent


def label_of(sid: str, agent: str | None, cli: str | None) -> str:
    what = ", ".join(x for x in (agent, cli) if x)
    return f"{sid} ({what})" if what else sid


def of_subagent(sid: str) -> Caller | None:
    """The caller a subagent is, from its spawn record; None when `sid` is
    not a subagent whose trail is here."""
    from zapcli.errors import NotFound
    from zapcli.trail import reader, store

    try:
        spawn = reader.spawn_of(store.path_for(sid))
    except (NotFound, OSError):
        return None
    if spawn is None:
        return None
    return Caller(spawn.session, sid, label_of(sid, spawn.agent, spawn.cli), sid)


def current() -> Caller:
    """The caller of a command: a subagent's work (its marker), else the session's person."""
    marker = os.environ.get("ZAPCLI_SUBAGENT_ID", "")
    if marker.startswith("sa_"):
        found = of_subagent(marker)
        if found is not None:
            return found
    from zapcli.lifecycle import session as sessions

    return Caller(sessions.current(), USER, USER)


def of_run(run_id: str) -> Caller:
    """A `zapcli run` as a caller (its own board tool): its session is its id."""
    return Caller(run_id, run_id, run_id)
