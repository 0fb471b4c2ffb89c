"""`zapcli wait`: block until all (or any) subagents end; exit 0 / 3 / 4."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines, is_tty
from zapcli.cli.render import duration, view_json, wait_lines
from zapcli.cli.settings import for_observers
from zapcli.cli.spinner import Spinner
from zapcli.errors import EXIT_OK, EXIT_WAIT_NOT_COMPLETED, EXIT_WAIT_TIMEOUT
from zapcli.ops.poll import wait


def execute(ids: list[str], timeout: float | None = None, any: bool = False, json: bool = False) -> int:
    with Spinner(enabled=is_tty() and not json) as spin:
        res = wait(list(ids), for_observers(), timeout_s=timeout, any_=any,
                   on_tick=lambda vs, t: spin.update(
                       f"waiting for {sum(not v.terminal for v in vs)} subagent(s) ({duration(t)})"))
    done = [v for v in res.views if v.terminal]
    if res.timed_out:
        code = EXIT_WAIT_TIMEOUT
    elif all(v.status == "completed" for v in done):
        code = EXIT_OK
    else:
        code = EXIT_WAIT_NOT_COMPLETED
    if json:
        emit_json({"timed_out": res.timed_out, "waited_s": round(res.waited_s, 3), "exit_code": code,
                   "subagents": [view_json(v) for v in res.views]})
        return code
    emit_lines(wait_lines(res))
    return code
