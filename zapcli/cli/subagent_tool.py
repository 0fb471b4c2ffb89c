"""The `subagent` tool (SPEC §7.4): spawn/poll/wait/list/kill for a parent LLM.

Imports `zapcli.ops`, `zapcli.cli.render`, `zapcli.agent.types`. It calls the
same functions as the CLI and answers with the same text the CLI prints, so
an LLM sees exactly what a person would. Poll and wait run inside the tool
and consume no model turns; `announcements()` tells the model, before each
call, which of its subagents ended since the last call.
"""

from __future__ import annotations

import threading
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.backends import NAMES as BACKEND_NAMES
from zapcli.config import load_settings
from zapcli.errors import ZapcliError
from zapcli.render import poll as render_poll
from zapcli.render.common import plain

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["spawn", "poll", "wait", "list", "kill"],
                   "description": "spawn: start a subagent (returns its id at once); poll: status "
                                  "and folded output (waits up to 5 s + wait_secs); wait: block "
                                  "until they end (no ids = every subagent you started); list: "
                                  "your subagents; kill: stop them."},
        "task": {"type": "string", "description": "spawn: the complete, self-contained task."},
        "cli": {"type": "string", "enum": list(BACKEND_NAMES),
                "description": "spawn: zapcli (an LLM agent, default), sh (a shell command), or "
                               "an agent CLI installed here (claude, codex, gemini, opencode)."},
        "agent": {"type": "string", "description": "spawn: definition name (e.g. explorer, code-reviewer)."},
        "model": {"type": "string", "description": "spawn: model override."},
        "timeout": {"type": "number", "description": "spawn: deadline in seconds (default 300); wait: give up after."},
        "after": {"type": "array", "items": {"type": "string"},
                  "description": "spawn: start only after these subagent ids completed."},
        "ids": {"type": "array", "items": {"type": "string"}, "description": "poll/wait/kill: subagent ids."},
        "wait_secs": {"type": "integer", "minimum": 0, "maximum": 30, "description": "poll: extra seconds to wait."},
        "any": {"type": "boolean", "description": "wait: return when any one has ended."},
    },
    "required": ["action"],
    "additionalProperties": False,
}
DESCRIPTION = ("Run work in parallel background subagents. Spawn several at once (one call each, "
               "in the same message), then wait for them; finished subagents are also announced "
               "to you before your next turn.")


def tool_schema() -> dict[str, Any]:
    """The OpenAI function-tool schema (what `zapcli tool-schema` prints)."""
    return ToolSpec("subagent", DESCRIPTION, SCHEMA).to_openai()


class SubagentTool:
    spec = ToolSpec("subagent", DESCRIPTION, SCHEMA)

    def __init__(self, *, approval: str = "workspace", unattended: bool = False,
                 shell_allowed: bool = True) -> None:
        """Children inherit the parent's approval mode and `unattended` (never
        looser than the parent); `cli: sh` is a shell command, so it exists only
        for a parent whose definition grants `bash` (undeclared = unreachable),
        and it goes through the same approval as `bash` (Policy.check)."""
        self.approval, self.unattended, self.shell_allowed = approval, unattended, shell_allowed
        self.started: list[str] = []
        self.budget: Any = None  # ops.budget.TreeBudget of `run --max-tokens`
        self._announced: set[str] = set()
        self._lock = threading.Lock()

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        action = args.get("action")
        handler = getattr(self, f"_{action}", None) if action in SCHEMA["properties"]["action"]["enum"] else None
        if handler is None:
            return ToolResult(False, f"unknown action {action!r}; use one of spawn, poll, wait, list, kill")
        try:
            return ToolResult(True, handler(args, ctx))
        except ZapcliError as exc:
            return ToolResult(False, exc.for_tool())

    def _spawn(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from zapcli.ops.spawn import SpawnRequest, spawn

        cli = args.get("cli") or None  # None: the definition's `cli:`, else zapcli
        if cli == "sh" and not self.shell_allowed:
            raise ZapcliError("cli `sh` runs a shell command, and this agent's definition does not "
                              "grant `bash`; spawn a `zapcli` subagent instead")
        shell = cli == "sh"  # the approval fields belong to the agent backend only
        # Under a tree budget: refused once spent; an agent child gets what is left as its own.
        left = self.budget.check_spawn() if self.budget is not None else None
        res = spawn(SpawnRequest(task=str(args.get("task") or ""), cli=cli,
                                 max_tokens=None if shell else left,
                                 agent=args.get("agent"), model=args.get("model"),
                                 timeout_s=args.get("timeout"), cwd=ctx.cwd,
                                 after=tuple(args.get("after") or ()),
                                 approval=None if shell else self.approval,
                                 unattended=False if shell else self.unattended))
        with self._lock:
            self.started.append(res.id)
        from zapcli.render import spawn as render_spawn

        return plain(render_spawn.tool_lines(res))

    def _poll(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from zapcli.ops.poll import poll

        res = poll(self._ids(args), load_settings(), wait_secs=None if args.get("wait_secs") is None else int(args["wait_secs"]))
        self._mark(e.id for e in res.entries if e.view and e.view.terminal)
        return plain(render_poll.lines(res))

    def _wait(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from zapcli.ops.poll import poll, wait

        ids = self._ids(args)
        res = wait(ids, load_settings(), timeout_s=args.get("timeout"), any_=bool(args.get("any")))
        final = poll(ids, load_settings(), no_wait=True)
        self._mark(e.id for e in final.entries if e.view and e.view.terminal)
        from zapcli.render import wait as render_wait

        head = plain(render_wait.lines(res)) if res.timed_out else ""
        return (head + "\n\n" if head else "") + plain(render_poll.lines(final))

    def _list(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from zapcli.ops.listing import list_subagents
        from zapcli.render import listing

        return plain(listing.lines(list_subagents(load_settings())))

    def _kill(self, args: dict[str, Any], ctx: ToolContext) -> str:
        from zapcli.ops.kill import kill
        from zapcli.render import kill as render_kill

        return plain(render_kill.lines(kill(self._ids(args), load_settings())))

    def _ids(self, args: dict[str, Any]) -> list[str]:
        """The ids asked for, all of them started by this run (undeclared means
        unreachable: the tool never reaches another session's work)."""
        ids = [str(i) for i in args.get("ids") or []]
        with self._lock:
            mine = list(self.started)
        if not ids:
            ids = mine
        if not ids:
            raise ZapcliError("no subagent ids given and none started yet; spawn first")
        foreign = [i for i in ids if i not in mine]
        if foreign:
            raise ZapcliError(f"{', '.join(foreign)}: not a subagent this run started; this tool "
                              f"reaches only its own ({', '.join(mine) or 'none yet'})",
                              code="not_yours")
        return ids

    def _mark(self, ids: Any) -> None:
        with self._lock:
            self._announced.update(ids)

    def announcements(self) -> list[str]:
        """One line per subagent of ours that ended since the last call."""
        from zapcli.errors import NotFound
        from zapcli.lifecycle.observe import observe
        from zapcli.ops.usage import settle

        with self._lock:
            todo = [sid for sid in self.started if sid not in self._announced]
        lines = []
        for sid in todo:
            try:
                view = observe(sid)
            except NotFound:
                continue
            if not view.terminal:
                continue
            settle(view)
            first = (view.report or view.reason or "").strip().split("\n")[0][:200]
            lines.append(f"[SubAgent] {sid} finished: {view.status}" + (f" — {first}" if first else ""))
            self._mark([sid])
        return lines
