"""`zapcli merge`: a finished subagent's work into the checkout's current branch."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.merge import merge
from zapcli.render import merge as render


def execute(id: str, squash: bool = False, rebase: bool = False, json: bool = False) -> int:
    emit(json, render.doc, render.lines, merge(id, squash=squash, rebase=rebase))
    return 0
