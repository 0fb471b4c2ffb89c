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
    waiting: list[str] = list(ids or ()) or outstanding()

    def tick(views: list, elapsed: float) -> None:
        _asked(told, views)
        waiting[:] = [v.id for v in views if not v.terminal]
        spin.update(f"waiting for {len(waiting)} subagent(s) ({duration(elapsed)})")

    try:
        with Spinner(enabled=is_tty() and not json) as spin:
            res = wait(list(waiting), for_observers(), timeout_s=timeout, any_=any, on_tick=tick)
    except KeyboardInterrupt:
        return _interrupted(waiting, json)
    emit(json, render.doc, render.lines, res)
    return res.exit_code


def _interrupted(waiting: list[str], json: bool) -> int:
    """Ctrl-C stops the waiting, not the work: say so, and how to stop it."""
    from zapcli.render.docschema import error_doc

    if waiting:
        ids = " ".join(waiting) if len(waiting) <= 4 else " ".join(waiting[:4]) + " …"
        said = (f"interrupted: stopped waiting; {len(waiting)} subagent(s) keep running "
                f"({ids}) — `zapcli kill ID` stops one, `zapcli wait` waits again")
    else:
        said = "interrupted: stopped waiting"
    sys.stderr.write(f"zapcli: {said}\n")
    if json:  # a reader of stdout still gets one document, as for every interruption
        from zapcli.cli.output import emit_json

        emit_json(error_doc("interrupted", said, 130))
    return 130
