"""The `subagent` tool of `zapcli run` (docs/explanation/rules.md#the-subagent-tool), generated from the one
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
from collections.abc import Callable
from typing import Any

from zapcli import tracecontext
from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.lifecycle import landing
from zapcli.toolapi.dispatch import Env, call_document
from zapcli.toolapi.schema import DESCRIPTION, RUN_NOTE, TOOL_NAME, subagent_schema
from zapcli.toolapi.spec import BY_NAME

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
        self._staged: list[str] = []  # announced, reaching the model with its next call
        self.late: list[dict[str, Any]] = []  # results the run waited for after its model answered
        self._waited = False
        self.waiting: Callable[[list[str]], None] | None = None  # said as a wait for results begins
        self._lock = threading.Lock()
        # stop means stop: once halted no action runs; what changes things is counted while
        # it runs, so the run's end waits for a spawn under way to be registered, never misses it
        self._busy = 0
        self._gate = threading.Condition()
        self._halted = False
        self.stopped: Any = None  # the run's signals, seen from the moment one is sent (runend.Halt)

    @property
    def halted(self) -> bool:
        return self._halted or (self.stopped is not None and self.stopped.is_set())

    @property
    def started(self) -> list[str]:
        with self.env.lock:
            return list(self.env.started)

    def refuse(self, args: dict[str, Any]) -> str | None:
        """Why this call could never run, before the person is asked to
        approve it (the agent loop asks this first): a spawn once the run's
        --max-subagents is reached, or a shell command from a run whose
        definition does not grant `bash` (each as its handler says it)."""
        if args.get("action") != "spawn":
            return None
        if self.env.parent is not None:
            from zapcli.budget.allot import cap_reached

            capped = cap_reached(self.env.parent)
            if capped is not None:
                return capped
        if self.env.shell_allowed:
            return None
        clis = args.get("attempt_cli")
        clis = [clis] if isinstance(clis, str) else clis if isinstance(clis, list) else []
        if args.get("cli") == "sh" or "sh" in [n.strip() for c in clis if isinstance(c, str)
                                              for n in c.split(",")]:
            from zapcli.toolapi.handlers import NO_SHELL

            return NO_SHELL
        return None

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        acts = not BY_NAME[args["action"]].read_only if args.get("action") in BY_NAME else False
        with self._gate:
            if self.halted:
                return ToolResult(False, "not run: the run was interrupted")
            self._busy += acts
        try:
            self.env.cwd = ctx.cwd
            # what it spawns is a child span of this call's `execute_tool` span
            here = tracecontext.child_env(ctx.env, tracecontext.tool_key(ctx.call_id)).get("TRACEPARENT")
            party = getattr(ctx, "party", None)
            if party is not None and args.get("action") != "spawn":
                party.arrive()  # only a spawn reserves: the message's spawns need not wait for it
            env = self.env.copy(siblings=max(getattr(ctx, "siblings", 1), 1),
                                batch=getattr(ctx, "batch", 0), party=party,
                                **({"traceparent": here} if here else {}))
            reply = call_document(args, env)
        finally:
            with self._gate:
                self._busy -= acts
                self._gate.notify_all()
        return ToolResult(not reply.error, reply.text)

    def halt(self, wait_s: float = 30.0) -> None:
        """Nothing more runs; returns once the actions under way that change
        things (a spawn being registered) have ended, or after `wait_s`."""
        with self._gate:
            self._halted = True
            self._gate.wait_for(lambda: self._busy <= 0, timeout=wait_s)

    def _adopt(self, sid: str, pending: tuple[str, ...]) -> str:
        """C27: what `sid` left running becomes ours — announced when it ends,
        reachable by poll and wait, listed if its result never reaches us."""
        with self.env.lock:
            new = [p for p in pending if p not in self.env.started]
            self.env.started.extend(new)
        return landing.adopted(pending)

    def notify(self, line: str) -> None:
        """A notice for the model before its next call (an approval decided)."""
        with self._lock:
            self._notices.append(line)

    def due(self) -> list[str]:
        """Subagents of ours (started, or taken over) whose end the model has not been told."""
        with self.env.lock:
            told = self.env.announced | set(self._staged)
            return [sid for sid in self.env.started if sid not in told]

    def await_results(self, stopping: Callable[[], bool]) -> bool:
        """The model answered: while results are due, wait for the next one
        (the loop's hook; `announcements` hands it over before the next call)."""
        due = self.due()
        if not due or self.halted:
            return False
        self._waited = True
        if any(landing.ended(sid) for sid in due):  # ended already, not told yet: no wait
            return True
        if self.waiting is not None:
            self.waiting(due)
        landing.wait_for_next(self.due, lambda: stopping() or self.halted)
        return True

    def delivered(self) -> None:
        """The announcements were sent to the model (its next call began)."""
        with self.env.lock:
            staged, self._staged = self._staged, []
        self.env.seen(staged)

    def announcements(self) -> list[str]:
        """Notices, then one line per subagent of ours that ended since the
        last call; nothing once the run is halted (it makes no more calls)."""
        if self.halted:
            return []
        from zapcli.errors import NotFound
        from zapcli.lifecycle.observe import observe
        from zapcli.ops.usage import settle

        with self._lock:
            lines, self._notices = self._notices, []
        unfunded = 0
        with self.env.lock:
            todo = [sid for sid in self.env.started if sid not in self._ended]
            seen = set(self.env.announced)
        late, self._waited = self._waited, False
        for sid in todo:
            try:
                view = observe(sid)
            except NotFound:  # removed (rm, clean, gc) before it was told
                self._ended.add(sid)
                lines.append(landing.gone(sid))
                self._stage(sid)
                continue
            if not view.terminal:
                continue
            self._ended.add(sid)
            adopted = self._adopt(sid, view.pending)
            if sid in seen:  # its end reached the model through poll or wait
                lines += [f"[SubAgent] {sid}{adopted}"] if adopted else []
                continue
            settle(view)
            lines.append(landing.said(view, adopted))
            unfunded += (view.reason or "").startswith(UNFUNDED)
            self._stage(sid)
            if late:
                self.late.append({"id": sid, "status": str(view.status),
                                  "summary": landing.summary(view)})
        if unfunded:  # C41: the parent is told how many, not only each one's end
            lines.insert(0, f"[token budget] {unfunded} subagent{'s' if unfunded > 1 else ''} "
                            "could not be funded: the tree's budget is all held by running "
                            "subagents or spent, so they ended failed (budget) without starting. "
                            "Wait for the running ones (what they do not use returns), or do "
                            "the work yourself.")
        return lines

    def _stage(self, sid: str) -> None:
        with self.env.lock:
            self._staged.append(sid)
