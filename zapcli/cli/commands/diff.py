"""`zapcli diff`: a subagent's tree against its base."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.diff import diff
from zapcli.render import diff as render


def execute(id: str, stat: bool = False, name_only: bool = False, json: bool = False) -> int:
    emit(json, render.doc, render.lines, diff(id, stat=stat, name_only=name_only))
    return 0
