"""`zapcli send`, `approve`, `deny`: messages to a running subagent through its trail.

Imports `zapcli.lifecycle`, `zapcli.trail`; `zapcli.executors` for a remote
runner. Each appends one record; the child reads its trail before each model
call (steer) and every 100 ms while waiting for a decision (approvals), so no
extra channel is needed. A runner on another machine (SPEC §15) reads its
own trail there: its executor `deliver`s the record to it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from zapcli.errors import UsageError, ZapcliError
from zapcli.lifecycle.observe import observe
from zapcli.trail import store
from zapcli.trail.reader import load

MAX_MESSAGE_BYTES = 32 * 1024


@dataclass
class SteerResult:
    id: str
    steer_id: str
    status: str


def send(sid: str, text: str) -> SteerResult:
    sid = store.resolve(sid)
    """Queue `text` for delivery before the subagent's next model call.

    Raises ZapcliError when the subagent already ended (not delivered) or is
    not a built-in agent; UsageError for an empty text.
    """
    if not text or not text.strip():
        raise UsageError("the message is empty; give the text to send")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_MESSAGE_BYTES:  # a record holds 64 KB: refuse rather than cut it short
        raise UsageError(f"the message is {size:,} bytes; the limit is {MAX_MESSAGE_BYTES:,} "
                         "(32 KB); write the material to a file and send its path")
    view = observe(sid)
    if view.cli != "zapcli":
        raise ZapcliError(f"{sid} runs the `{view.cli}` backend, which takes no messages", code="wrong_backend")
    if view.terminal:
        raise ZapcliError(f"not delivered: {sid} already ended ({view.status})", code="not_delivered")
    steer_id = os.urandom(4).hex()
    fields = {"steer_id": steer_id, "text": text, "delivered": False}
    seq = store.append(store.path_for(sid), "steer", fields)
    if seq is None:
        raise ZapcliError(f"could not write to the trail of {sid}")
    _to_runner(sid, {"type": "steer", "seq": seq, **fields})
    return SteerResult(sid, steer_id, view.status)


def _to_runner(sid: str, record: dict) -> None:
    """A runner on another machine reads its own trail there: hand it the
    record (a local one reads this trail). Raises ExecutorError."""
    s = load(sid)
    if s.spawn.executor == "local" or s.process is None:  # a queued one takes it at launch
        return
    from zapcli import executors

    executors.get(s.spawn.executor).deliver(sid, s.process.raw, [record])


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
