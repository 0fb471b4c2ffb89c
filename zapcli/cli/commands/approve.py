"""`zapcli approve` / `zapcli deny`: settle a pending approval request."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.steer import decide
from zapcli.render import messages as render


def execute(id: str, req: str | None = None, json: bool = False, *, approve: bool = True,
            reason: str | None = None) -> int:
    emit(json, render.decided_doc, render.decided_lines, decide(id, req, approve, reason))
    return 0
