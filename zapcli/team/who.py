"""Whose call it is, for the board and messages (docs/explanation/rules.md#fleets-traces-teams): the session the
board belongs to and the holder a claim is made for.

Imports `zapcli.trail` (a subagent's frozen spawn record), `zapcli.lifecycle.session`,
`zapcli.team.claims` (what a claimer can take).
Inside a subagent (`ZAPCLI_SUBAGENT_ID` in its work's environment, or the
id a team tool is built for) the session is the one its spawn record names —
never what the environment says, so a subagent reaches only its own
session's board and siblings — and the holder is the subagent, whose claims
go back to the board when it ends. What it can take comes from its frozen
definition: the labels it declares (`board: {labels: [...]}`; none declared,
none served) and the tools it grants; without a definition (a shell, an
agent CLI with its own tools) it has every tool and serves no label. A
`zapcli run` (its own board tool) holds as its run id. Anyone else is the
session's person (`you`), who serves every label and has every tool: their
claims stay until `done` or `board release`. A subagent whose runner runs
elsewhere (a remote executor: a Ray node) is `away`: its session's board and
messages are in the state folder of the machine that spawned it, out of its
reach, so its every call is refused, saying so (`holders.refuse_ended`) —
never answered from the node's own, empty board.

A `Caller` built once for a surface that lives (a team tool, the team MCP
server) remembers the fencing number of each claim it made, so its `done`
and `release` carry it without the model having to.
"""

from __future__ import annotations

import os

from zapcli.plain import field, plain
from zapcli.team.claims import EVERYONE, Fit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.trail.model import SpawnRecord

USER = "you"


@plain
class Caller:
    session: str
    holder: str  # a subagent id, a run id, or USER
    label: str  # how others read the holder: "sa_… (worker, claude)"
    subagent: str | None = None  # set when the caller is a subagent
    fit: Fit = EVERYONE  # the labels it serves, the tools it has
    away: str = ""  # a remote executor's name: it runs where its session's board is not
    fences: dict[int, int] = field(default_factory=dict, compare=False, repr=False)


def label_of(sid: str, agent: str | None, cli: str | None) -> str:
    what = ", ".join(x for x in (agent, cli) if x)
    return f"{sid} ({what})" if what else sid


def of_spawn(sid: str, spawn: SpawnRecord) -> Caller:
    """The caller subagent `sid` is, from its frozen spawn record."""
    definition = spawn.definition
    label = label_of(sid, spawn.agent, spawn.cli)
    if definition is None:
        fit = Fit(labels=(), tools=None, who=label)
    else:
        board = definition.get("board")
        labels = board.get("labels") if isinstance(board, dict) else None
        fit = Fit(labels=tuple(str(x) for x in labels or ()),
                  tools=tuple(str(t) for t in definition.get("tools") or ()), who=label)
    return Caller(spawn.session, sid, label, sid, fit, away=_away(spawn.executor))


def _away(executor: str) -> str:
    """`executor` when it runs a runner on another machine (unknown here: so
    taken), else ""."""
    if executor == "local":
        return ""
    from zapcli import executors

    try:
        return "" if not executors.get(executor).remote else executor
    except (KeyError, executors.Unusable):
        return executor


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
    return of_spawn(sid, spawn)


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
