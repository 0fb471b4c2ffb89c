"""`zapcli send`: steer a running subagent before its next model call."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.steer import send
from zapcli.render import messages as render


def execute(id: str, text: str, json: bool = False) -> int:
    emit(json, render.sent_doc, render.sent_lines, send(id, text))
    return 0
