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

UNFUNDED = "budget: not funded"  # the reason of a child its tree could not fund (ops.tree)


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
        self._ended: set[str] = set()  # ended, and what they left running taken over (C27)
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

    def _adopt(self, sid: str, pending: tuple[str, ...]) -> str:
        """C27: what `sid` left running becomes ours — announced when it ends,
        reachable by poll and wait, listed if its result never reaches us."""
        with self.env.lock:
            new = [p for p in pending if p not in self.env.started]
            self.env.started.extend(new)
        if not pending:
            return ""
        return (f" (it ended with {len(pending)} subagent(s) of its own still running: "
                f"{', '.join(pending)}; their results come to you)")

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
        unfunded = 0
        with self.env.lock:
            todo = [sid for sid in self.env.started if sid not in self._ended]
            seen = set(self.env.announced)
        for sid in todo:
            try:
                view = observe(sid)
            except NotFound:
                continue
            if not view.terminal:
                continue
            self._ended.add(sid)
            adopted = self._adopt(sid, view.pending)
            if sid in seen:  # its end reached the model through poll or wait
                lines += [f"[SubAgent] {sid}{adopted}"] if adopted else []
                continue
            settle(view)
            first = (view.report or view.reason or "").strip().split("\n")[0][:200]
            lines.append(f"[SubAgent] {sid} finished: {view.status}" + (f" — {first}" if first else "")
                         + adopted)
            unfunded += (view.reason or "").startswith(UNFUNDED)
            self.env.seen([sid])
        if unfunded:  # C41: the parent is told how many, not only each one's end
            lines.insert(0, f"[token budget] {unfunded} subagent{'s' if unfunded > 1 else ''} "
                            "could not be funded: the tree's budget is all held by running "
                            "subagents or spent, so they ended failed (budget) without starting. "
                            "Wait for the running ones (what they do not use returns), or do "
                            "the work yourself.")
        return lines
