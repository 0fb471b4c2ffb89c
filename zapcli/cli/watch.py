"""Approvals reach the parent session (docs/explanation/rules.md#tool-surfaces): while `zapcli run` works, a
thread watches the trails of the subagents it started and asks the person at
the terminal about each approval request the moment it is made — id, task,
tool, one-line summary — one question at a time (the same lock as the run's
own questions). The answer decides it (`ops.steer.decide`); a question
decided elsewhere meanwhile (`zapcli approve`, top) or whose subagent ended
ends its line saying so; Ctrl-D denies this and every later question; without a terminal each request is denied at
once, the reason told to the child. The parent model never decides: it is
told the outcome in a notice before its next model call. A run that cannot
ask anyone (no terminal, `--unattended`) says each denial of its children's
requests on stderr as it happens and keeps it for its report (`denied`):
those children inherit the run's unattended mode and deny by themselves.

Imports `zapcli.lifecycle.observe`, `zapcli.ops.steer`, `zapcli.cli.output`;
rich only when it asks.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from zapcli.cli.output import escape_controls
from zapcli.errors import ZapcliError

POLL_S = 0.25
NO_TERMINAL = ("no terminal to ask for approval: the parent `zapcli run` has none, so requests "
               "are denied at once")
INPUT_ENDED = "no answer at the terminal (its input ended); denied"
INTERRUPTED = "the run was interrupted; denied"


class ApprovalWatcher(threading.Thread):
    """`started()` lists the run's subagents; `notify(line)` tells the parent
    model; `gate` is the run's TerminalApprover (its `unattended` means nobody
    can answer any more) and `lock` the one-question-at-a-time lock."""

    def __init__(self, started: Callable[[], list[str]], notify: Callable[[str], None],
                 gate: Any, lock: threading.Lock, denied: list[dict[str, Any]] | None = None):
        super().__init__(name="approval-watcher", daemon=True)
        self.started, self.notify, self.gate, self.lock = started, notify, gate, lock
        self.asked: set[tuple[str, str]] = set()
        self.stop = threading.Event()
        self.denied = denied  # None: a person is asked, and sees what they decide
        self.told: set[tuple[str, str]] = set()
        self.settled: set[str] = set()  # ended, and every denial in it told

    def run(self) -> None:
        while not self.stop.wait(POLL_S):
            try:
                self._scan()
            except Exception as exc:  # noqa: BLE001 - the watcher must outlive a bad trail
                sys.stderr.write(f"zapcli: note: approval watcher: {exc}\n")

    def halt(self) -> None:
        """The run was interrupted: no question is asked from now on, and an
        answer given to one already on the terminal is not acted on (the
        run's end denies the request as it stops the child)."""
        self.stop.set()

    def catch_up(self) -> None:
        """Once more, as the run ends: tell the denials made since the last
        look (only where nobody is asked; a question is never asked now)."""
        if self.denied is None:
            return
        if self.is_alive():
            self.join(timeout=POLL_S * 4)  # its own look, if one is under way, ends first
        try:
            self._scan()
        except Exception:  # noqa: BLE001 - the run's end must not fail on a bad trail
            pass

    def _scan(self) -> None:
        from zapcli.errors import NotFound
        from zapcli.trail import store
        from zapcli.trail.reader import read, summarize

        for sid in self.started():
            if sid in self.settled:
                continue
            try:
                trail = read(store.path_for(sid))
            except (NotFound, OSError):
                continue
            state = summarize(trail)
            if state is None:
                continue
            if self.denied is not None:
                self._tell_denials(sid, trail.records)
                if state.final is not None:
                    self.settled.add(sid)
            req = state.pending_approval
            if req is None or state.final is not None:
                continue
            key = (sid, str(req.get("req_id")))
            if key in self.asked:
                continue
            self.asked.add(key)
            from zapcli.redact import display

            task = display(state.spawn.task)
            asked = self._ask(sid, key[1], task, req)
            if asked is None:  # decided elsewhere while it was asked: said, and told
                continue
            self._decide(sid, key[1], req, *asked)

    def _tell_denials(self, sid: str, records: list[dict[str, Any]]) -> None:
        """Say each denied request of `sid` once, on stderr, and keep it."""
        asked: dict[str, dict[str, Any]] = {}
        for rec in records:
            req_id = str(rec.get("req_id"))
            if rec.get("type") == "approval_request":
                asked[req_id] = rec
            elif (rec.get("type") == "approval_decision" and rec.get("decision") == "deny"
                  and (sid, req_id) not in self.told and self.denied is not None):
                self.told.add((sid, req_id))
                req = asked.get(req_id, {})
                self.denied.append({"id": sid, "req_id": req_id, "tool": req.get("tool"),
                                    "summary": req.get("summary"), "reason": rec.get("reason")})
                summary = " ".join(str(req.get("summary") or req.get("tool")).split())[:100]
                why = " ".join(str(rec.get("reason")).split())[:300]
                try:
                    sys.stderr.write(escape_controls(f"zapcli: note: {sid} asked to run {summary} "
                                                     f"({req_id}): denied — {why}") + "\n")
                except OSError:
                    pass

    def _ask(self, sid: str, req_id: str, task: str,
             req: dict[str, Any]) -> tuple[bool, str] | None:
        """The person's answer, or None when the request was decided
        elsewhere (`zapcli approve`, top) or its subagent ended while the
        question waited: the question's line then says so, and the parent
        model is told a decision as if made here."""
        if self._halted():
            return False, INTERRUPTED
        if self.gate.unattended:
            return False, INPUT_ENDED if getattr(self.gate, "input_ended", False) else NO_TERMINAL
        from zapcli.cli.output import Settled, ask_approval

        with self.lock:
            if self.gate.unattended:  # the input ended while this one waited its turn
                return False, INPUT_ENDED
            flat = escape_controls(" ".join(task.split()))
            sys.stderr.write(f"\n[subagent {sid} asks ({req_id})] task: {flat[:80]}"
                             f"{'…' if len(flat) > 80 else ''}\n")
            seen: dict[str, Any] = {}
            try:
                ok = ask_approval(str(req.get("summary") or req.get("tool")),
                                  lambda: self._settled(sid, req_id, seen))
            except Settled as done:
                sys.stderr.write(f"{done.said}\n")
                sys.stderr.flush()
                if seen.get("decision"):
                    self._told(sid, req_id, req, seen["decision"] == "approve",
                               str(seen.get("reason") or ""))
                return None
            except EOFError:  # Ctrl-D: nobody answers any more; this and later ones are denied
                self.gate.unattended = True
                self.gate.input_ended = True
                sys.stderr.write("\n")
                return False, INPUT_ENDED
        if ok and self._halted():  # answered after the run was interrupted
            return False, INTERRUPTED
        return ok, "approved at the terminal" if ok else "denied at the terminal"

    @staticmethod
    def _settled(sid: str, req_id: str, seen: dict[str, Any]) -> str | None:
        """What ended the question about `sid`'s `req_id` while it waited, as
        its answer reads on the question's line; None while it is pending.
        The decision found is kept in `seen`."""
        from zapcli.errors import NotFound
        from zapcli.trail import store
        from zapcli.trail.reader import read, summarize

        try:
            trail = read(store.path_for(sid))
        except (NotFound, OSError):
            return None
        for rec in trail.records:
            if rec.get("type") == "approval_decision" and str(rec.get("req_id")) == req_id:
                seen.update(rec)
                approved = rec.get("decision") == "approve"
                verb = "approved" if approved else "denied"
                why = escape_controls(" ".join(str(rec.get("reason") or "").split())[:200])
                if rec.get("by") != "user":  # its own deadline, the policy, its end
                    return f"{verb}: {why}" if why else verb
                default = why in ("", "approved by the user", "denied by the user")
                return (f"{verb} elsewhere (zapcli {'approve' if approved else 'deny'} or top)"
                        + ("" if default else f": {why}"))
        state = summarize(trail)
        if state is not None and state.final is not None:
            return f"no longer asked: {sid} ended ({state.final.status})"
        return None

    def _halted(self) -> bool:
        """Interrupted (the run's approver sees a signal from the moment it is sent)."""
        stopped = getattr(self.gate, "stopped", None)  # runend.Halt
        return (self.stop.is_set() or bool(getattr(self.gate, "halted", False))
                or bool(stopped is not None and stopped.confirmed()))

    def _decide(self, sid: str, req_id: str, req: dict[str, Any], approve: bool, reason: str) -> None:
        from zapcli.ops.steer import decide

        if approve and self._halted():  # at the point of deciding, once more
            approve, reason = False, INTERRUPTED

        try:
            decide(sid, req_id, approve, reason)
        except ZapcliError as exc:  # decided elsewhere meanwhile, or it ended
            sys.stderr.write(f"zapcli: note: {sid} {req_id}: {exc.message}\n")
            return
        self._told(sid, req_id, req, approve, reason)

    def _told(self, sid: str, req_id: str, req: dict[str, Any], approve: bool, reason: str) -> None:
        """Tell the parent model what became of `sid`'s request."""
        summary = " ".join(str(req.get("summary") or req.get("tool")).split())[:100]
        verb = "approved" if approve else "denied"
        self.notify(f"[SubAgent] {sid} asked to run {summary} ({req_id}): {verb} — {reason}. "
                    "Approvals are decided by the person running zapcli, not by you.")
