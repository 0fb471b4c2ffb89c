"""`zapcli poll`: wait briefly, then show each subagent's state and folded output."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines, is_tty, missing_ids_exit
from zapcli.cli.render import duration, folded_json, poll_lines, view_json
from zapcli.cli.settings import for_observers
from zapcli.cli.spinner import Spinner
from zapcli.ops.poll import poll


def execute(ids: list[str], wait_secs: int | None = None, no_wait: bool = False, json: bool = False) -> int:
    with Spinner(enabled=is_tty() and not json) as spin:
        res = poll(list(ids), for_observers(), wait_secs=wait_secs, no_wait=no_wait,
                   on_tick=lambda es, t: spin.update(
                       f"{sum(1 for e in es if e.view and not e.view.terminal)} still running ({duration(t)})"))
    if json:
        emit_json({"waited_s": round(res.waited_s, 3), "all_running": res.all_running, "subagents": [
            {"id": e.id, "error": e.error, **(view_json(e.view) if e.view else {}),
             "output": folded_json(e.output) if e.output else None,
             "stderr_tail": e.stderr_tail} for e in res.entries]})
    else:
        emit_lines(poll_lines(res))
    return missing_ids_exit([str(e.error) for e in res.entries if e.view is None])
