"""`zapcli pick`: merge one attempt, remove the other attempts' trees."""

from __future__ import annotations

from zapcli.cli.commands.merge import allowing
from zapcli.cli.output import emit
from zapcli.cli.settings import for_observers
from zapcli.ops.pick import pick
from zapcli.render import attempts as render


def execute(id: str, squash: bool = False, rebase: bool = False,
            allow_control_files: bool = False, force: bool = False, json: bool = False) -> int:
    emit(json, render.pick_doc, render.pick_lines,
         pick(id, for_observers(), squash=squash, rebase=rebase,
              allow_control=allowing(id, allow_control_files, json), force=force))
    return 0
