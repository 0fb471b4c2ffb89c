"""Messages to a subagent (docs/explanation/rules.md#the-agent-loop, docs/explanation/rules.md#fleets-traces-teams): `zapcli send`, and a subagent's
message to a sibling of its session, by id or name.

Imports `zapcli.trail`, `zapcli.lifecycle` (observe, the session's members),
`zapcli.executors` for a remote runner, `zapcli.team.who`. A message is a
`steer` record in the recipient's trail; how it reaches the work is the
recipient backend's fact, frozen in its spawn record (`inbox`): the built-in
agent reads it before its next model call; an agent CLI with the team tools
gets it with the result of its next `board` or `message` call (zapcli's team
MCP server hands it over and records the delivery); a backend with neither
takes no messages, and sending is refused, saying so. A sender that is a
subagent which ended (terminal or lost) sends nothing (`holders.refuse_ended`). A subagent (its
marker, or the caller a team tool is built for) reaches only the subagents
of its own session, and never itself.
"""

from __future__ import annotations

import os

from zapcli.errors import NotFound, UsageError, ZapcliError
from zapcli.plain import plain
from zapcli.team.who import Caller
from zapcli.trail import reader, removals, runs, store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from zapcli.trail.model import SpawnRecord

MAX_MESSAGE_BYTES = 32 * 1024
MODEL_CALL = "before its next model call"


@plain
class Sent:
    id: str
    steer_id: str
    status: str
    inbox: str  # how it reaches the work: "before its next model call", ...
    name: str | None = None  # the name it was sent to, when not an id


def inbox_of(spawn: SpawnRecord) -> str | None:
    """How a message reaches `spawn`'s work, or None when nothing can take one.
    Trails from before the `inbox` field: the built-in agent reads messages."""
    inbox = spawn.raw.get("inbox")
    if isinstance(inbox, str) or "inbox" in spawn.raw:
        return inbox if isinstance(inbox, str) else None
    return MODEL_CALL if spawn.cli == "zapcli" else None


def why_none(sid: str) -> str | None:
    """Why nothing can hand `sid` a message now, in a few words for a person
    about to type one (`top`'s attach); None when `send` would deliver it."""
    from zapcli.lifecycle.observe import observe

    try:
        spawn = _spawn(sid)
        view = observe(sid)
    except (ZapcliError, OSError):
        return None  # `send` says what is wrong
    if inbox_of(spawn) is None:
        return ("a shell command takes no messages" if spawn.cli == "sh" else
                f"the `{spawn.cli}` backend takes no messages (no team tools)")
    if view.terminal:
        lost = (f" before reading {view.undelivered_messages} message(s) sent to it"
                if view.undelivered_messages else "")
        return (f"it ended ({view.status}){lost}: nothing reads a message now "
                f"(zapcli continue {view.id} TEXT carries on)")
    return None


def check_text(text: str) -> None:
    if not text or not text.strip():
        raise UsageError("the message is empty; give the text to send")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_MESSAGE_BYTES:  # a record holds 64 KB: refuse rather than cut it short
        raise UsageError(f"the message is {size:,} bytes; the limit is {MAX_MESSAGE_BYTES:,} "
                         "(32 KB); write the material to a file and send its path")


def _looks_like_id(value: str) -> bool:
    tail = value[12:] if value.startswith("sa_") else value
    return len(tail) == 8 and all(c in "0123456789abcdef" for c in tail)


def _spawn(sid: str) -> SpawnRecord:
    try:
        found = reader.spawn_of(store.path_for(sid))
    except (FileNotFoundError, NotADirectoryError):  # as every command says an unknown id
        raise NotFound(removals.missing(sid)) from None
    if found is None:
        raise NotFound(f"{sid} does not exist")
    return found


def _by_name(caller: Caller, name: str) -> str:
    """The subagent of the caller's session that goes by `name` (its
    definition's name, or the name it was spawned with): the live one."""
    from zapcli.lifecycle import session as sessions
    from zapcli.lifecycle.observe import observe

    named = []
    for sid in sessions.members(caller.session):
        if sid == caller.subagent:
            continue
        try:
            spawn = _spawn(sid)
        except (NotFound, OSError):
            continue
        if name in (spawn.agent, spawn.raw.get("name")):
            named.append(sid)
    if not named:
        raise ZapcliError(f"no subagent of this session is named {name!r}: give its id, or its "
                          "definition's name (`zapcli list` shows them)", code="not_found")
    live = [sid for sid in named if not observe(sid).terminal]
    if len(live) > 1:
        raise ZapcliError(f"{len(live)} running subagents are named {name!r} ({', '.join(live)}): "
                          "give the id of the one you mean", code="ambiguous")
    if not live:
        raise ZapcliError(f"not delivered: the subagent named {name!r} ({named[-1]}) already ended",
                          code="not_delivered")
    return live[0]


def target(caller: Caller | None, to: str) -> str:
    """The id `to` names: an id, its 8-hex tail, or (in the caller's session)
    a name. A subagent caller reaches only its own session. Raises NotFound,
    ZapcliError."""
    to = to.strip()
    if not to:
        raise UsageError("say whom to send it to: a subagent's id or name")
    if _looks_like_id(to):
        sid = store.resolve(to)
    elif runs.is_run_id(to):  # a run's id: said as what it is (`store.path_for`)
        sid = store.path_for(to).stem
    elif caller is None:
        raise NotFound(f"{to} does not exist")
    else:
        sid = _by_name(caller, to)
    if caller is not None and caller.subagent is not None:
        if sid == caller.subagent:
            raise UsageError("that is you: send to another subagent of your session")
        if _spawn(sid).session != caller.session:
            raise ZapcliError(f"{sid} is not in your session: a subagent reaches only the "
                              "subagents of its own session", code="other_session")
    return sid


def send(to: str, text: str, caller: Caller | None = None) -> Sent:
    """Queue `text` for `to`. `caller`: who sends (a subagent: only to its
    session, the text says who it is from); None for a person's `zapcli send`.
    Raises ZapcliError when the recipient ended or takes no messages."""
    from zapcli.lifecycle.observe import observe

    if caller is not None:
        from zapcli.team.holders import refuse_ended

        refuse_ended(caller)  # a subagent that ended sends nothing
    check_text(text)
    sid = target(caller, to)
    spawn = _spawn(sid)
    inbox = inbox_of(spawn)
    if inbox is None:
        raise ZapcliError(f"{sid} is a shell command: nothing reads a message it is sent (only "
                          "an agent reads messages: zapcli's own, or an agent CLI whose definition "
                          "says `team: true`)" if spawn.cli == "sh" else
                          f"{sid} runs the `{spawn.cli}` backend without zapcli's team tools, so "
                          "nothing can hand it a message (a definition with `team: true` gives "
                          "an agent CLI the board and message tools)", code="wrong_backend")
    view = observe(sid)
    if view.terminal:
        raise ZapcliError(f"not delivered: {sid} already ended ({view.status})", code="not_delivered")
    if caller is not None and caller.subagent is not None:
        text = f"[message from {caller.label}] {text}"
    steer_id = os.urandom(4).hex()
    fields: dict[str, Any] = {"steer_id": steer_id, "text": text, "delivered": False}
    if caller is not None and caller.subagent is not None:
        fields["from"] = caller.subagent
    seq = store.append(store.path_for(sid), "steer", fields)
    if seq is None:
        raise ZapcliError(f"could not write to the trail of {sid}")
    _to_runner(sid, {"type": "steer", "seq": seq, **fields})
    return Sent(sid, steer_id, str(view.status), inbox, None if _looks_like_id(to) else to)


def _to_runner(sid: str, record: dict[str, Any]) -> None:
    """A runner on another machine reads its own trail there: hand it the
    record (a local one reads this trail). Raises ExecutorError."""
    s = reader.load(sid)
    if s.spawn.executor == "local" or s.process is None:  # a queued one takes it at launch
        return
    from zapcli import executors

    executors.get(s.spawn.executor).deliver(sid, s.process.raw, [record])


def pending(sid: str) -> list[dict[str, Any]]:
    """The messages sent to `sid` that nobody has handed over yet, oldest first."""
    recs = reader.read(store.path_for(sid)).records
    given = {r.get("steer_id") for r in recs if r.get("type") == "steer" and r.get("delivered")}
    return [r for r in recs if r.get("type") == "steer" and not r.get("delivered")
            and r.get("steer_id") not in given]


def take(sid: str, by: str) -> list[str]:
    """Hand over `sid`'s pending messages (their texts), recording each as
    delivered (`by`: what handed it over), once: under the trail's lock."""
    path = store.path_for(sid)
    with store.locked(path):
        out = []
        for rec in pending(sid):
            store.append(path, "steer", {"steer_id": rec.get("steer_id"), "text": rec.get("text"),
                                         "delivered": True, "by": by})
            out.append(str(rec.get("text") or ""))
    return out
