"""`send`, `approve`, `deny`: what was delivered or decided."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines, one_line
from zapcli.render.docschema import stamp
from zapcli.render.text import alt


def sent_lines(res: Any) -> Lines:
    to = f" ({res.name})" if getattr(res, "name", None) else ""
    inbox = getattr(res, "inbox", None) or "before its next model call"
    return [("", f"[SubAgent] {res.id}{to}: message queued; delivered {inbox}, if it makes one "
                 "(" + alt(f"zapcli continue {res.id} TEXT otherwise; zapcli poll {res.id} says if "
                           "it was not", "action poll says if it was not; action replay shows when")
                 + ")")]


def sent_doc(res: Any) -> dict[str, Any]:
    return stamp("send", {"id": res.id, "steer_id": res.steer_id, "delivered": False, "status": res.status,
            "inbox": getattr(res, "inbox", None), "name": getattr(res, "name", None)})


def decided_lines(res: Any) -> Lines:
    approved = res.decision == "approve"
    verb = "approved" if approved else "denied"
    return [("green" if approved else "yellow",
             f"[SubAgent] {res.id}: {verb} {res.req_id} ({one_line(res.summary, 100)})")]


def decided_doc(res: Any) -> dict[str, Any]:
    return stamp("decision", {"id": res.id, "req_id": res.req_id, "decision": res.decision, "tool": res.tool,
            "summary": res.summary})
