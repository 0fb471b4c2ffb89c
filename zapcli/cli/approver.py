"""The run's approver (`zapcli run`): the policy's verdict, and a person's
answer on the terminal for what asks — one question at a time, the run's
own calls and its children's (`zapcli.cli.watch`) alike. Without a terminal
(or once its input ended) what asks is denied with a reason; a run that
could never ask keeps each such denial of its own calls for its end
(`denied_approvals`). Imports `zapcli.approvals` and the CLI's output.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from zapcli.agent.types import Verdict
from zapcli.approvals import Decision, Policy
from zapcli.cli.output import escape_controls
from zapcli.cli.watch import INTERRUPTED
from zapcli.paths import control_roots, own_code, own_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.cli.runend import Halt


def _refused_anyway(args: dict[str, Any]) -> bool:
    """A merge or pick the op refuses before looking at the work (no
    worktree, not finished, not an attempt: `ops.merge.ready`): the tool call
    runs and says so, and nobody is asked about it."""
    action, sid = args.get("action"), args.get("id")
    if action not in ("merge", "pick") or not isinstance(sid, str):
        return False
    from zapcli.errors import ZapcliError
    from zapcli.ops import merge, pick

    flags = {k: bool(args.get(k)) for k in ("squash", "rebase")}
    try:
        if action == "pick":
            pick.ready(sid, force=bool(args.get("force")), **flags)
        else:
            merge.ready(sid, **flags)
    except ZapcliError:
        return True
    return False


class TerminalApprover(Policy):
    """Asks y/N on the terminal; denies when there is none (never blocks a script)."""

    def __init__(self, mode: str, workspace: str, cwd: str, roots: tuple[str, ...], unattended: bool):
        unattended = unattended or not (sys.stdin.isatty() and sys.stderr.isatty())
        from zapcli.backends.registry import control_files

        super().__init__(mode, workspace, cwd, roots, unattended, control_roots(), control_files(),
                         tuple(own_code()), tuple(filter(None, [own_tree(workspace)])))
        self.input_ended = False
        self.stopped: Halt | None = None  # the run's signals, seen from the moment they are sent
        self._halted = False
        self.bound: dict[str, Any] | None = None  # the run's own fields: what it may hand on
        # the run's own calls denied only because nobody could be asked, with its children's
        # (`denied_approvals`); None: a person is asked
        self.denied: list[dict[str, Any]] | None = None
        self.run_id = ""

    @property
    def halted(self) -> bool:
        """Interrupted: nothing more is approved (asked again as an answer arrives)."""
        return self._halted or (self.stopped is not None and self.stopped.is_set())

    def halt(self) -> None:
        """The run was interrupted: every question, asked or not, is denied."""
        self._halted = True

    def check(self, tool: str, args: dict[str, Any], *, allowlisted: bool | None = None) -> Any:
        """The policy's verdict; a merge or pick that would be refused anyway
        asks nothing; and a definition saved with more than this
        run holds asks in every mode (`full` too), as spawning it would."""
        verdict = super().check(tool, args, allowlisted=allowlisted)
        if tool == "subagent" and verdict.action != "allow" and _refused_anyway(args):
            return Decision("allow", verdict.summary, "refused before it changes anything: "
                            "nothing to approve")
        from zapcli.ops.delegate import saved_widens

        more = saved_widens(args, self.bound) if tool == "subagents_save" and self.bound else []
        if not more or verdict.action == "deny":
            return verdict
        why = f"the definition would hold more than this run: {'; '.join(more)}"
        return Decision("deny", verdict.summary, f"not saved: {why}, and nobody can approve it "
                        "here. Save one within what this run holds, or say in your report what "
                        "a person should save", unasked=True) if self.unattended else Decision(
            "ask", f"{verdict.summary}\n{why}", why)

    def keep_denials(self, run_id: str, denied: list[dict[str, Any]]) -> None:
        """When nobody can be asked, keep each of the run's own calls denied
        for that in `denied` (its children's go there too)."""
        if self.unattended:
            self.denied, self.run_id = denied, run_id

    def _unasked(self, tool: str, summary: str, reason: str) -> tuple[bool, str]:
        """A call of the run's own denied because nobody could be asked: kept
        for the run's end (`denied_approvals`); (False, reason)."""
        if self.denied is not None:
            self.denied.append({"id": self.run_id, "req_id": None, "tool": tool,
                                "summary": summary, "reason": reason})
        return False, reason

    def ask_widening(self, what: str) -> tuple[bool, str]:
        """The person approves a child that would hold more than this run
        (`zapcli.ops.delegate`); nobody at the terminal: denied."""
        if self.halted:
            return False, INTERRUPTED
        if self.unattended:
            return self._unasked("subagent", f"subagent: {what}",
                                 "nobody is at the terminal to approve it: the run is unattended")
        from zapcli.cli.output import ask_approval

        with _ASKING:
            try:
                ok = ask_approval(f"subagent: {what}")
            except EOFError:
                self.unattended = self.input_ended = True
                return False, "no answer at the terminal (its input ended); denied"
        return self._answered(ok)

    def _answered(self, ok: bool) -> tuple[bool, str]:
        if self.halted or (self.stopped and self.stopped.confirmed()):  # answered after the signal
            return False, INTERRUPTED
        return ok, "approved at the terminal" if ok else "denied at the terminal"

    def ask(self, tool: str, verdict: Verdict, args: dict[str, Any]) -> tuple[bool, str]:
        if verdict.action == "allow":
            return True, ""
        if verdict.action == "deny":
            if getattr(verdict, "unasked", False) and not self.halted:
                return self._unasked(tool, verdict.summary, verdict.reason)
            return False, verdict.reason or "denied by policy"
        if self.halted:
            return False, INTERRUPTED
        if self.unattended:
            return self._unasked(tool, verdict.summary,
                                 "no terminal to ask for approval (run with --approval full to allow)")
        from zapcli.cli.output import ask_approval

        # One question at a time: concurrent `subagent` calls may ask together.
        with _ASKING:
            if tool == "subagents_save":  # a configuration change: show what it saves
                from zapcli.cli.definition_tools import save_preview

                sys.stderr.write(escape_controls(save_preview(args, self.workspace)) + "\n")
            try:
                ok = ask_approval(verdict.summary)
            except EOFError:  # the terminal's input ended: nobody can answer any more
                self.unattended = self.input_ended = True
                sys.stderr.write("\n")
                return False, "no answer at the terminal (its input ended); denied"
        return self._answered(ok)


_ASKING = threading.Lock()
