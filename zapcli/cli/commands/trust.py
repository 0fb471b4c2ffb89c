"""`zapcli trust [PATH]` (and `untrust`): trust a folder's own zapcli files,
show what a trust covers, list and revoke trusted folders."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops import trust as op
from zapcli.render import trust as render


def execute(path: str | None = None, list_: bool = False, show: bool = False,
            revoke: bool = False, json: bool = False) -> int:
    res = op.execute(path, list_, show, revoke)
    if isinstance(res, op.TrustList):
        emit(json, render.list_doc, render.list_lines, res)
    else:
        emit(json, render.doc, render.lines, res)
    return 0
