"""`zapcli rm`: remove finished subagents by id."""

from __future__ import annotations

from dataclasses import replace

from zapcli.cli.output import emit_each
from zapcli.cli.settings import for_observers
from zapcli.ops.remove import rm
from zapcli.render import remove as render


def execute(ids: list[str], json: bool = False) -> int:
    res = rm(list(ids), for_observers())
    others = {sid: why for sid, why in res.refused.items() if sid not in res.missing}
    shown = (replace(res, refused=others) if res.removed or res.kept or others else None)
    code = emit_each(json, render.doc, render.lines, res, shown,
                     [res.refused[sid] for sid in res.missing])
    return 1 if res.refused else code
