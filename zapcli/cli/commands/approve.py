"""`zapcli approve` / `zapcli deny`: settle a pending approval request."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.cli.render import one_line
from zapcli.ops.steer import decide


def execute(id: str, req: str | None = None, json: bool = False, *, approve: bool = True,
            reason: str | None = None) -> int:
    res = decide(id, req, approve, reason)
    if json:
        emit_json({"id": res.id, "req_id": res.req_id, "decision": res.decision, "tool": res.tool,
                   "summary": res.summary})
    else:
        verb = "approved" if approve else "denied"
        emit_lines([("green" if approve else "yellow",
                     f"[SubAgent] {res.id}: {verb} {res.req_id} ({one_line(res.summary, 100)})")])
    return 0
