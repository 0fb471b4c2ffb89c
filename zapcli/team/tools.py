"""The `board` and `message` tools (docs/explanation/rules.md#fleets-traces-teams): one schema and one handler
each, for every agent — the built-in agent (`agent_tools`) and an agent CLI
through zapcli's team MCP server (`zapcli.mcpserver.team`).

Imports `zapcli.team` and `zapcli.render.board` / `.messages` (the text a
model reads is what a person reads). A handler takes the tool's arguments
and the `Caller` it was built for — the subagent (or run) itself, never
chosen by the model — and returns (ok, text). With `inbox` (an agent CLI,
which has no way to be handed a message between its model calls) every
answer ends with the messages sent to it that nobody handed over yet. A
subagent that ended is refused every call (`holders.refuse_ended`) and is
handed nothing.
"""

from __future__ import annotations

from zapcli.errors import ZapcliError
from zapcli.render.text import spell
from zapcli.team import holders, messages, work
from zapcli.team.who import Caller

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

BOARD = "board"
MESSAGE = "message"

BOARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["list", "claim", "done", "release", "show", "add"],
                   "description": "list: every task; claim: take the next open task (or `task`); "
                                  "done: finish the task you hold with `result`; release: give it "
                                  "back; show: one task in full; add: put a new task on the board"},
        "task": {"type": "string", "description": "A task id (t3): for show, and for claim, done or "
                                                  "release of that task rather than the next / yours"},
        "text": {"type": "string", "description": "add: what the new task is"},
        "after": {"type": "array", "items": {"type": "string"},
                  "description": "add: ids of tasks that must be done before it can be claimed"},
        "label": {"type": "string", "description": "add: a label; only a claimer whose "
                                                   "definition serves it can claim the task"},
        "needs": {"type": "array", "items": {"type": "string"},
                  "description": "add: tools a claimer must have to be handed the task "
                                 "(e.g. write, edit, bash)"},
        "result": {"type": "string", "description": "done: what you did or found; the others "
                                                    "read it (say where files are)"},
        "wait_secs": {"type": "integer", "minimum": 0, "maximum": 600,
                      "description": "claim: wait up to this long for a task to become claimable "
                                     "(its --after tasks done, a holder gone; on an empty board, "
                                     "the first one added)"},
    },
    "required": ["action"],
}
BOARD_DESCRIPTION = (
    "The task board you share with the other subagents of your session. Claim one task at a "
    "time, do it, then mark it done with your result; claim the next until nothing is left. "
    "A task whose --after tasks are not done cannot be claimed yet; you are handed only tasks "
    "your definition serves (its label) and has the tools for; when you stop without `done`, "
    "your task goes back to the board for another.")
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["send", "read", "list"],
                   "description": "send: `text` to the subagent `to`; read: messages sent to you; "
                                  "list: the subagents of your session (ids, names, statuses)"},
        "to": {"type": "string", "description": "send: a subagent's id, or its name (its "
                                                "definition's name)"},
        "text": {"type": "string", "description": "send: the message"},
    },
    "required": ["action"],
}
MESSAGE_DESCRIPTION = (
    "Messages between the subagents of your session: send one to a sibling by id or name, read "
    "those sent to you, list who is there. Only your own session is reachable.")


def _text(lines: list[tuple[str, str]]) -> str:
    return spell("\n".join(text for _style, text in lines), "tool")


def _str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and value.strip() else None


def board_call(caller: Caller, args: dict[str, Any]) -> str:
    """One `board` call's text. Raises ZapcliError (the model reads its message)."""
    from zapcli.render import board as render

    action = args.get("action")
    task = _str(args, "task")
    if action == "list":
        return _text(render.list_lines(work.list_tasks(caller)))
    if action == "claim":
        wait = args.get("wait_secs")
        wait_s = float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) else 0.0
        return _text(render.claim_lines(work.claim(caller, task, wait_s)))
    if action == "done":
        return _text(render.changed_lines(work.done(caller, task, str(args.get("result") or ""))))
    if action == "release":
        return _text(render.changed_lines(work.release(caller, task)))
    if action == "show":
        if task is None:
            raise ZapcliError("show needs `task` (an id such as t3)", code="usage")
        return _text(render.show_lines(work.show(caller, task)))
    if action == "add":
        after = [str(a) for a in args.get("after") or () if isinstance(a, (str, int))]
        needs = [str(n) for n in args.get("needs") or () if isinstance(n, str)]
        res = work.add(caller, str(args.get("text") or ""), after=after, label=_str(args, "label"),
                       needs=needs)
        return _text(render.changed_lines(res))
    raise ZapcliError(f"unknown board action {action!r}: use list, claim, done, release, show or add",
                      code="usage")


def message_call(caller: Caller, args: dict[str, Any], *, inbox: bool = False,
                 waiting: Callable[[], int] | None = None) -> str:
    """One `message` call's text. Raises ZapcliError."""
    from zapcli.render import messages as render

    action = args.get("action")
    if action != "send":  # send refuses an ended sender itself
        holders.refuse_ended(caller)
    if action == "send":
        res = messages.send(str(args.get("to") or ""), str(args.get("text") or ""), caller)
        return _text(render.sent_lines(res))
    if action == "read":
        if inbox:
            return "No messages for you." if not messages.pending(caller.holder) else ""
        count = waiting() if waiting else 0
        return ("Messages reach you by themselves, before your next model call: "
                + (f"{count} sent to you will be with it." if count else "none is waiting now."))
    if action == "list":
        return members(caller)
    raise ZapcliError(f"unknown message action {action!r}: use send, read or list", code="usage")


def members(caller: Caller) -> str:
    """The subagents of the caller's session, one a line: id, name, backend, status."""
    from zapcli.errors import NotFound
    from zapcli.lifecycle import session as sessions
    from zapcli.lifecycle.observe import observe

    lines = []
    for sid in sessions.members(caller.session):
        try:
            view = observe(sid)
        except NotFound:
            continue
        me = " (you)" if sid == caller.subagent else ""
        lines.append(f"{sid}{me}: {view.agent or '-'} on {view.cli}, {view.status}")
    return "\n".join(lines) or "No subagents in this session."


def answer(caller: Caller, name: str, args: dict[str, Any], *,
           inbox: bool = False, waiting: Callable[[], int] | None = None) -> tuple[bool, str]:
    """(ok, text) for a call of tool `name`; with `inbox`, the messages
    waiting for the caller follow the answer (and are handed over); else
    `waiting()` counts those its agent will be handed before its next call."""
    try:
        if name == BOARD:
            ok, text = True, board_call(caller, args)
        elif name == MESSAGE:
            ok, text = True, message_call(caller, args, inbox=inbox, waiting=waiting)
        else:
            ok, text = False, f"unknown tool {name!r}"
    except ZapcliError as exc:
        ok, text = False, exc.for_tool()
        if exc.code == "ended":
            return ok, text  # nothing is handed to a subagent that ended
    if inbox and caller.subagent is not None:
        handed = messages.take(caller.subagent, by="team tools")
        if handed:
            text = (text + "\n\n" if text else "") + "Messages for you:\n" + "\n".join(
                f"- {m}" for m in handed)
    return ok, text
