"""`zapcli rm`: remove finished subagents by id."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.cli.settings import for_observers
from zapcli.ops.remove import rm
from zapcli.render import remove as render


def execute(ids: list[str], json: bool = False) -> int:
    res = rm(list(ids), for_observers())
    emit(json, render.doc, render.lines, res)
    return 1 if res.refused else 0
