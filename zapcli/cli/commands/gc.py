"""`zapcli gc`: retention on demand. A watching command (docs/explanation/rules.md#where-things-live): an invalid
config file is warned about once and skipped; retention then deletes nothing
by `max_kept` (it would be a guess) but still trims and removes clean worktrees."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.cli.settings import for_observers
from zapcli.ops.gc import gc
from zapcli.render import gc as render


def execute(dry_run: bool = False, json: bool = False) -> int:
    emit(json, render.doc, render.lines, gc(for_observers(), dry_run=dry_run))
    return 0
