"""`zapcli send`: steer a running subagent before its next model call."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.ops.steer import send


def execute(id: str, text: str, json: bool = False) -> int:
    res = send(id, text)
    if json:
        emit_json({"id": res.id, "steer_id": res.steer_id, "delivered": False, "status": res.status})
    else:
        emit_lines([("", f"[SubAgent] {res.id}: message queued; delivered before its next model call "
                         f"(zapcli replay {res.id} shows when)")])
    return 0
