"""`zapcli send`, `approve`, `deny`: messages to a running subagent through its trail.

Imports `zapcli.lifecycle`, `zapcli.trail`, `zapcli.team.messages` (a
message, to whom and how it arrives); `zapcli.executors` for a remote
runner. Each appends one record; the child reads its trail before each model
call (steer) and every 100 ms while waiting for a decision (approvals), so no
extra channel is needed. A runner on another machine (docs/explanation/rules.md#remote-execution) reads its
own trail there: its executor `deliver`s the record to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from zapcli.errors import ZapcliError
from zapcli.lifecycle.observe import observe
from zapcli.team.messages import Sent
from zapcli.trail import store
from zapcli.trail.reader import load


def send(to: str, text: str) -> Sent:
    """Queue `text` for the subagent `to` (an id, or in this session a name),
    delivered as its backend allows (`team.messages`). Inside a subagent (its
    marker in the environment) only a sibling of its session is reachable.
    Raises ZapcliError when it already ended (not delivered) or takes no
    messages; UsageError for an empty or oversized text."""
    from zapcli.team import messages, who

    return messages.send(to, text, who.current())


def _to_runner(sid: str, record: dict) -> None:
    from zapcli.team.messages import _to_runner as deliver

    deliver(sid, record)


@dataclass
class DecisionResult:
    id: str
    req_id: str
    decision: str
    tool: str
    summary: str


def decide(sid: str, req_id: str | None, approve: bool, reason: str | None = None) -> DecisionResult:
    sid = store.resolve(sid)
    """Approve or deny the pending request `req_id` (the only pending one when None).

    Raises ZapcliError when nothing is pending or `req_id` is not pending.
    """
    view = observe(sid)
    if view.terminal:
        raise ZapcliError(f"{sid} already ended ({view.status}); nothing to decide", code="ended")
    # Check and append under the trail's decision lock: of two racing
    # `approve`/`deny` (or a kill), exactly one decides; the other is told so.
    with store.locked(store.path_for(sid)):
        s = load(sid)
        pending = s.pending_approval
        if s.final is not None:
            raise ZapcliError(f"{sid} already ended ({s.final.status}); nothing to decide",
                              code="ended")
        if pending is None:
            raise ZapcliError(f"{sid} has no pending approval request", code="not_pending")
        if req_id is not None and str(pending.get("req_id")) != req_id:
            raise ZapcliError(f"{sid} has no pending request {req_id}; pending: "
                              f"{pending.get('req_id')}", code="not_pending")
        decision = "approve" if approve else "deny"
        fields = {"req_id": pending.get("req_id"), "decision": decision,
                  "reason": reason or ("approved by the user" if approve else "denied by the user"),
                  "by": "user"}
        seq = store.append(store.path_for(sid), "approval_decision", fields)
    if seq is not None:
        _to_runner(sid, {"type": "approval_decision", "seq": seq, **fields})
    return DecisionResult(sid, str(pending.get("req_id")), decision, str(pending.get("tool")),
                          str(pending.get("summary", "")))
