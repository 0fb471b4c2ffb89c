"""`zapcli poll`: wait briefly, then show each subagent's state and folded output."""

from __future__ import annotations

from zapcli.cli.output import emit_each, is_tty
from zapcli.cli.settings import for_observers
from zapcli.cli.spinner import Spinner
from zapcli.ops.poll import poll
from zapcli.plain import replace
from zapcli.render import poll as render
from zapcli.render.common import duration


def execute(ids: list[str], wait_secs: int | None = None, no_wait: bool = False, json: bool = False) -> int:
    with Spinner(enabled=is_tty() and not json) as spin:
        res = poll(list(ids), for_observers(), wait_secs=wait_secs, no_wait=no_wait,
                   on_tick=lambda es, t: spin.update(
                       f"{sum(1 for e in es if e.view and not e.view.terminal)} still running ({duration(t)})"))
    found = [e for e in res.entries if e.view is not None]
    return emit_each(json, render.doc, render.lines, res, replace(res, entries=found) if found else None,
                     [str(e.error) for e in res.entries if e.view is None])
