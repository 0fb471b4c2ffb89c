"""`zapcli wait`: block until all (or any) subagents end; exit 0 / 3 / 4."""

from __future__ import annotations

from zapcli.cli.output import emit, is_tty
from zapcli.cli.settings import for_observers
from zapcli.cli.spinner import Spinner
from zapcli.ops.poll import wait
from zapcli.render import wait as render
from zapcli.render.common import duration


def execute(ids: list[str], timeout: float | None = None, any: bool = False, json: bool = False) -> int:
    with Spinner(enabled=is_tty() and not json) as spin:
        res = wait(list(ids), for_observers(), timeout_s=timeout, any_=any,
                   on_tick=lambda vs, t: spin.update(
                       f"waiting for {sum(not v.terminal for v in vs)} subagent(s) ({duration(t)})"))
    emit(json, render.doc, render.lines, res)
    return res.exit_code
