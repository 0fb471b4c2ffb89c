"""`zapcli wait`: block until all (or any) subagents end; exit 0 / 3 / 4.
No ids: every subagent of this session that has not ended (`ops.poll.outstanding`)."""

from __future__ import annotations

import sys

from zapcli.cli.output import emit, is_tty, note
from zapcli.cli.settings import for_observers
from zapcli.cli.spinner import Spinner
from zapcli.ops.poll import outstanding, wait
from zapcli.render import wait as render
from zapcli.render.common import duration
from zapcli.render.text import shown


def _asked(told: set[tuple[str, str]], views: list) -> None:
    """Say once, on stderr, when a subagent waits for the caller's decision:
    `wait` keeps blocking, and nobody else may be there to answer."""
    for v in views:
        req = v.pending_approval
        if req and (v.id, str(req.get("req_id"))) not in told:
            told.add((v.id, str(req.get("req_id"))))
            note(f"{v.id} awaits approval {req.get('req_id')} (zapcli approve {v.id} | "
                 f"zapcli deny {v.id} --reason TEXT) of:")
            whole = shown(str(req.get("summary") or req.get("tool") or ""))  # never cut
            sys.stderr.write("".join(f"  {line}\n" for line in whole.split("\n")))


def execute(ids: list[str] | None = None, timeout: float | None = None, any: bool = False, json: bool = False) -> int:
    told: set[tuple[str, str]] = set()

    def tick(views: list, elapsed: float) -> None:
        _asked(told, views)
        spin.update(f"waiting for {sum(not v.terminal for v in views)} subagent(s) ({duration(elapsed)})")

    with Spinner(enabled=is_tty() and not json) as spin:
        res = wait(list(ids or ()) or outstanding(), for_observers(), timeout_s=timeout, any_=any, on_tick=tick)
    emit(json, render.doc, render.lines, res)
    return res.exit_code
