"""`zapcli gc`: retention on demand."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.config import load_settings
from zapcli.ops.gc import gc
from zapcli.render import gc as render


def execute(dry_run: bool = False, json: bool = False) -> int:
    emit(json, render.doc, render.lines, gc(load_settings(), dry_run=dry_run))
    return 0
