"""The `subagent` tool of `zapcli run` (SPEC §7.4), generated from the one
declaration in `zapcli.toolapi`.

Imports `zapcli.toolapi`, `zapcli.agent.types`. It offers the actions marked
`in_run` (no approve/deny: the person at the terminal decides approvals, the
model never does), reaches only the subagents this run started, and answers
with the same text as every other surface, spelled for `run`. Poll and wait
run inside the tool and consume no model turns; `announcements()` tells the
model, before each call, which of its subagents ended since the last call and
what was decided on their approval requests (`notify`).
"""

from __future__ import annotations

import threading
from typing import Any

from zapcli import tracecontext
from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.toolapi.dispatch import Env, call_document
from zapcli.toolapi.schema import DESCRIPTION, RUN_NOTE, TOOL_NAME, subagent_schema


def tool_schema() -> dict[str, Any]:
    """The OpenAI function-tool schema (what `zapcli tool-schema` prints)."""
    from zapcli.toolapi.schema import tool_schema as generated

    return generated()


class SubagentTool:
    spec = ToolSpec(TOOL_NAME, DESCRIPTION + RUN_NOTE, subagent_schema(run=True))

    def __init__(self, *, approval: str = "workspace", unattended: bool = False,
                 shell_allowed: bool = True) -> None:
        """Children inherit the parent's approval mode and `unattended` (never
        looser than the parent); `cli: sh` is a shell command, so it exists only
        for a parent whose definition grants `bash` (undeclared = unreachable),
        and it goes through the same approval as `bash` (Policy.check)."""
        self.env = Env(surface="run", approval=approval, unattended=unattended,
                       shell_allowed=shell_allowed, stop_on_approval=False)
        self._notices: list[str] = []
        # its children's approval requests denied without asking anyone (a run
        # with no terminal): said in the run's stream and its report
        self.denied: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def started(self) -> list[str]:
        with self.env.lock:
            return list(self.env.started)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.env.cwd = ctx.cwd
        # what it spawns is a child span of this call's `execute_tool` span
        here = tracecontext.child_env(ctx.env, tracecontext.tool_key(ctx.call_id)).get("TRACEPARENT")
        env = self.env.copy(siblings=max(getattr(ctx, "siblings", 1), 1), batch=getattr(ctx, "batch", 0),
                            **({"traceparent": here} if here else {}))
        reply = call_document(args, env)
        return ToolResult(not reply.error, reply.text)

    def notify(self, line: str) -> None:
        """A notice for the model before its next call (an approval decided)."""
        with self._lock:
            self._notices.append(line)

    def announcements(self) -> list[str]:
        """Notices, then one line per subagent of ours that ended since the last call."""
        from zapcli.errors import NotFound
        from zapcli.lifecycle.observe import observe
        from zapcli.ops.usage import settle

        with self._lock:
            lines, self._notices = self._notices, []
        with self.env.lock:
            todo = [sid for sid in self.env.started if sid not in self.env.announced]
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
            self.env.seen([sid])
        return lines
