"""`zapcli diff`: a subagent's tree against its base. Its stdout holds
only what git's own option would print (the patch, the stat, the file
names); the line saying what was compared goes to stderr."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.ops.diff import diff
from zapcli.render import diff as render


def execute(id: str, stat: bool = False, name_only: bool = False, json: bool = False) -> int:
    res = diff(id, stat=stat, name_only=name_only)
    if json:
        emit_json(render.doc(res))
        return 0
    emit_lines(render.head(res), stderr=True)
    body = render.body(res)
    if body:
        emit_lines(body)
    return 0
