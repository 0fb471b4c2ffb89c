"""How a foreground `zapcli run` ends when it does not simply finish: the
signals it ends on like Ctrl-C (SIGTERM, SIGHUP), the note naming what still
runs, and the one `--json` document.

Imports `zapcli.cli.output`, `zapcli.lifecycle.observe`, `zapcli.errors`.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

HUP_EXIT = 128 + signal.SIGHUP


class Terminated(Exception):
    """SIGTERM reached `zapcli run`: end like Ctrl-C, naming what still runs."""


class HungUp(Exception):  # noqa: N818 - a signal, not an error
    """SIGHUP (its terminal closed): end like Ctrl-C, naming what still runs."""


def on_signal(signum: int, frame: Any) -> None:
    raise HungUp() if signum == signal.SIGHUP else Terminated()


def say(text: str) -> None:
    """A line on stderr, which may be a terminal that has just closed (EIO)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def emit_run(run_id: str, status: str, reason: str | None, report: str | None, sub: Any,
             tokens: list[int], **extra: Any) -> None:
    """The one `run --json` document: `tokens` are the run's own model calls;
    `extra` keys (`running`, `error`) when the run did not complete."""
    from zapcli.cli.output import emit_json

    emit_json({"run_id": run_id, "status": status, "reason": reason, "report": report,
               "subagents": list(sub.started),
               "tokens": {"input_tokens": tokens[0], "output_tokens": tokens[1],
                          "cached_tokens": tokens[2]},
               "denied_approvals": list(sub.denied), **extra})


def left_running(sub: Any, run_id: str) -> list[str]:
    """Say which subagents of this run are still running, and how to stop them."""
    from zapcli.errors import NotFound
    from zapcli.lifecycle.observe import observe

    running = []
    for sid in list(sub.started):
        try:
            if not observe(sid).terminal:
                running.append(sid)
        except NotFound:
            continue
    if running:
        say(f"zapcli: note: {len(running)} subagent(s) of this run still running "
             f"({' '.join(running)}); stop them with ZAPCLI_SESSION={run_id} zapcli kill --all\n")
    return running


def interrupted(exc: BaseException, run_id: str, sub: Any, sink: Any, json: bool) -> None:
    """Ctrl-C, SIGTERM or SIGHUP: name what still runs; with --json the run
    document (one document, also when the run does not complete) and the exit
    code. Its children's approval requests are denied, the reason told to
    them, once they see it gone (`backends.gate.relay_gone`)."""
    running = left_running(sub, run_id)
    if isinstance(exc, HungUp):  # the terminal closed: as Ctrl-C, the note may reach nobody
        why = "the terminal closed (SIGHUP); subagents keep running"
        say(f"zapcli: run {run_id}: {why}\n")
        if json:
            emit_run(run_id, "interrupted", why, None, sub, sink.tokens, running=running,
                     error={"code": "interrupted", "message": why, "exit_code": HUP_EXIT})
        raise SystemExit(HUP_EXIT) from None
    if isinstance(exc, Terminated):
        sys.stderr.write(f"zapcli: run {run_id} was terminated (SIGTERM)\n")
        if json:
            emit_run(run_id, "cancelled", "terminated (SIGTERM)", None, sub, sink.tokens,
                     running=running)
        raise SystemExit(128 + signal.SIGTERM) from None
    if not json:
        raise exc
    sys.stderr.write("zapcli: interrupted\n")
    why = "interrupted (Ctrl-C); subagents keep running"
    emit_run(run_id, "interrupted", why, None, sub, sink.tokens, running=running,
             error={"code": "interrupted", "message": why, "exit_code": 130})
    raise SystemExit(130) from None

