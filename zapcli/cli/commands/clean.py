"""`zapcli clean`: remove every finished subagent of the session."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.cli.settings import for_observers
from zapcli.ops.remove import clean
from zapcli.render import remove as render


def execute(all: bool = False, status: list[str] | None = None, json: bool = False) -> int:
    emit(json, render.doc, render.lines, clean(for_observers(), all_sessions=all, status=status))
    return 0
