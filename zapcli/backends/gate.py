"""Approvals on the child side (docs/explanation/rules.md#approvals): the one decision function
(`zapcli.approvals.decide`) plus a trail-backed Approver.

Imports `zapcli.approvals`, `zapcli.trail`, `zapcli.backends.registry` (the
one list of control files, every backend's included). A request is an `approval_request`
record (fsynced); `zapcli approve|deny` append the `approval_decision`; the
child re-reads its trail every 100 ms, so it resumes within 500 ms. The wait
counts against the deadline; a kill settles it as denied. A child of `zapcli
run` with a terminal carries the run's identity (`relay` in its spawn record):
once that process is gone (checked every second, pid + create time through
`zapcli.supervisor.liveness`) the request is denied, saying why, instead of
waiting for a question nobody is shown.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from zapcli.agent.types import Verdict
from zapcli.approvals import Policy
from zapcli.paths import control_roots, own_code, own_tree
from zapcli.trail import events, reader, store
from zapcli.trail.model import is_terminal
from zapcli.trail.writer import TrailWriter

POLL_S = 0.1
RELAY_CHECK_S = 1.0


class Gate(Policy):
    """The child's approver: `check` from Policy, and an `ask` that records the
    question in the trail and waits for the answer."""

    def __init__(self, sid: str, writer: TrailWriter, *, mode: str, workspace: str, cwd: str,
                 writable_roots: tuple[str, ...], unattended: bool, deadline_mono: float,
                 terminated: threading.Event, relay: dict[str, Any] | None = None):
        from zapcli.backends.registry import control_files

        super().__init__(mode, workspace, cwd, writable_roots, unattended, control_roots(),
                         control_files(), tuple(own_code()), tuple(filter(None, [own_tree(workspace)])))
        self.sid, self.writer, self.relay = sid, writer, relay
        self.deadline, self.terminated = deadline_mono, terminated
        self.waiting: str | None = None  # the approval request it waits on now
        self.unanswered: str | None = None  # the last one the deadline ended, unanswered
        self._ids = itertools.count(1)

    def ask(self, tool: str, verdict: Verdict, args: dict[str, Any]) -> tuple[bool, str]:
        """Record the request; a policy denial is decided at once, anything
        else waits for `approve` / `deny` (or the deadline, or a kill)."""
        if verdict.action == "allow":
            return True, ""
        req_id = f"r{next(self._ids)}"
        self.writer.write_sync("approval_request", {"req_id": req_id, "tool": tool,
                                                    "summary": verdict.summary,
                                                    "arguments": args})
        if verdict.action == "deny":
            reason = verdict.reason or "denied by policy"
            self.writer.write_sync("approval_decision", {"req_id": req_id, "decision": "deny",
                                                         "reason": reason, "by": "policy"})
            return False, reason
        events.emit(self.writer.path, "needs_input")  # its hook runs now, nobody need be looking
        return self._wait(req_id)

    def _wait(self, req_id: str) -> tuple[bool, str]:
        self.waiting = req_id  # what the deadline finds it doing (`agent_run`'s end reason)
        try:
            return wait_decision(store.path_for(self.sid), req_id, deadline_mono=self.deadline,
                                 stopped=self.terminated.is_set,
                                 record=lambda f: self.writer.write_sync("approval_decision", f),
                                 relay=self.relay)
        finally:
            self.unanswered = req_id if time.monotonic() >= self.deadline else None
            self.waiting = None


def relay_gone(relay: dict[str, Any] | None) -> str | None:
    """Why nobody can be asked any more when the `zapcli run` that relays this
    subagent's approvals (`relay`: pid, create_time, host) has ended; None
    while it runs, or when there is none or it runs on another machine."""
    import socket

    from zapcli.supervisor.liveness import is_alive

    if not relay or relay.get("host") != socket.gethostname():
        return None
    if is_alive(relay.get("pid"), relay.get("create_time")):
        return None
    return (f"the `zapcli run` that asked a person about this subagent's approvals (pid "
            f"{relay.get('pid')}) is no longer running, so nobody can approve; do not retry "
            "the call, finish and say in your report what needs approval")


def wait_decision(path: Any, req_id: str, *, deadline_mono: float, stopped: Callable[[], bool],
                  record: Callable[[dict[str, Any]], Any],
                  relay: dict[str, Any] | None = None) -> tuple[bool, str]:
    """Wait for the decision on `req_id` in the trail at `path` (re-read every
    100 ms): (approved, reason). Denied when the subagent ends or `stopped()`;
    at the deadline, or once the `zapcli run` that relays the question
    (`relay`, checked every second) is gone, a denial is recorded through
    `record`, under the decision lock, so a user's answer landing right then
    is either seen or refused."""
    next_check = time.monotonic() + RELAY_CHECK_S
    while True:
        answer = _answer(path, req_id)
        if answer is not None:
            return answer
        if stopped():
            return False, "the subagent was stopped"
        gone = None
        if relay and time.monotonic() >= next_check:
            gone, next_check = relay_gone(relay), time.monotonic() + RELAY_CHECK_S
        if gone or time.monotonic() >= deadline_mono:
            why, by = (gone, "relay") if gone else ("deadline reached", "timeout")
            with store.locked(path):
                answer = _answer(path, req_id)
                if answer is not None:
                    return answer
                record({"req_id": req_id, "decision": "deny", "reason": why, "by": by})
            return False, gone or "the deadline was reached while waiting for approval"
        time.sleep(POLL_S)


def _answer(path: Any, req_id: str) -> tuple[bool, str] | None:
    """The first decision on `req_id` in the trail (the one that counts), or a
    denial when the subagent was stopped first; None while still pending."""
    for rec in reader.read(path).records:
        if rec.get("type") == "approval_decision" and rec.get("req_id") == req_id:
            return rec.get("decision") == "approve", str(rec.get("reason") or "")
        if rec.get("type") == "status" and is_terminal(rec.get("status")):
            return False, "the subagent was stopped"
    return None
