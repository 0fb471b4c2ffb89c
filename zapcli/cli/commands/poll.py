"""`zapcli poll`: wait briefly, then show each subagent's state and folded output."""

from __future__ import annotations

from zapcli.cli.output import emit, is_tty, missing_ids_exit
from zapcli.cli.settings import for_observers
from zapcli.cli.spinner import Spinner
from zapcli.ops.poll import poll
from zapcli.render import poll as render
from zapcli.render.common import duration


def execute(ids: list[str], wait_secs: int | None = None, no_wait: bool = False, json: bool = False) -> int:
    with Spinner(enabled=is_tty() and not json) as spin:
        res = poll(list(ids), for_observers(), wait_secs=wait_secs, no_wait=no_wait,
                   on_tick=lambda es, t: spin.update(
                       f"{sum(1 for e in es if e.view and not e.view.terminal)} still running ({duration(t)})"))
    emit(json, render.doc, render.lines, res)
    return missing_ids_exit([str(e.error) for e in res.entries if e.view is None], json)
