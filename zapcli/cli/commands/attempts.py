"""`zapcli attempts`: the siblings of `spawn --attempts` side by side."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.attempts import compare
from zapcli.render import attempts as render


def execute(id: str, check: str | None = None, json: bool = False) -> int:
    emit(json, render.doc, render.lines, compare(id, check=check))
    return 0
