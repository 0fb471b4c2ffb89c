"""`zapcli usage`: token totals per subagent and per session (parent run)."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.usage import usage
from zapcli.render import usage as render


def execute(all: bool = False, json: bool = False) -> int:
    emit(json, render.doc, render.lines, usage(all_sessions=all))
    return 0
