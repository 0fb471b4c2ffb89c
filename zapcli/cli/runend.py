"""How a foreground `zapcli run` ends when it does not simply finish: the
signals it ends on like Ctrl-C (SIGTERM, SIGHUP), the note naming what still
runs, stopping the run's tree, and the one `--json` document.

Imports `zapcli.cli.output`, `zapcli.cli.runtree`, `zapcli.lifecycle.observe`,
`zapcli.errors`.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(Exception):
    """SIGTERM reached `zapcli run`: end like Ctrl-C, naming what still runs."""


class HungUp(Exception):  # noqa: N818 - a signal, not an error
    """SIGHUP (its terminal closed): end like Ctrl-C, naming what still runs."""


def on_signal(halted: threading.Event) -> Callable[[int, Any], None]:
    """The handler of Ctrl-C, SIGTERM and SIGHUP while the run's loop runs:
    `halted` is set first (the loop, its tools and its spawns stop at it),
    then the main thread is interrupted to end the run."""
    def handler(signum: int, frame: Any) -> None:
        halted.set()
        if signum == signal.SIGHUP:
            raise HungUp()
        if signum == signal.SIGTERM:
            raise Terminated()
        raise KeyboardInterrupt()

    return handler


def _still(signum: int, frame: Any) -> None:
    """A second signal while the run stops: the stop goes on (it is bounded by the grace period)."""


def halt(halted: threading.Event, *stoppers: Any) -> None:
    """Stop means stop: from here no model call, tool or spawn starts. The
    signals say nothing more; each of `stoppers` (the approval watcher, the
    terminal's approver, the subagent tool) is halted: questions are
    denied, and a spawn under way is registered before the tree is ended."""
    halted.set()
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _still)
    for stopper in stoppers:
        stopper.halt()


def say(text: str) -> None:
    """A line on stderr, which may be a terminal that has just closed (EIO)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def emit_run(run_id: str, status: str, reason: str | None, report: str | None, sub: Any,
             tokens: Any, tree: Any = None, **extra: Any) -> None:
    """The one `run --json` document: `tokens` are the run's own model calls,
    `tree_tokens` the run's and every subagent's (what `usage` shows);
    `late_results`: results the run waited for after its model had answered,
    each handed to it; `undelivered`: results its model never saw;
    `denied_approvals`: its children's requests denied without asking;
    `extra` keys (`running`, `error`) when the run did not complete."""
    from zapcli.cli.output import emit_json

    undelivered, figures = tree if tree is not None else ([], None)
    from zapcli.render.docschema import stamp

    emit_json(stamp("run", {"run_id": run_id, "status": status, "reason": reason, "report": report,
               "subagents": list(sub.started), "tokens": tokens.doc(),
               "tree_tokens": figures.doc() if figures is not None else None,
               "late_results": list(sub.late), "undelivered": undelivered,
               "denied_approvals": list(sub.denied), **extra}))


def left_running(sub: Any) -> list[str]:
    """The subagents of this run still running now."""
    from zapcli.errors import NotFound
    from zapcli.lifecycle.observe import observe

    running = []
    for sid in list(sub.started):
        try:
            if not observe(sid).terminal:
                running.append(sid)
        except NotFound:
            continue
    return running


def close(tree: Any, sub: Any, run_id: str) -> Any:
    """End the run's tree (nothing outlives the run) and say what never
    reached it. A child's pending approval request is denied with that reason
    as it is stopped (`lifecycle.ending`)."""
    from zapcli.cli.runtree import say_undelivered

    running = left_running(sub)
    if running:
        say(f"zapcli: note: stopping {len(running)} subagent(s) of this run still "
            f"running ({' '.join(running)}): a run's subagents never outlive it\n")
    closed = tree.close(sub)
    try:
        say_undelivered(closed[0], run_id)
    except (OSError, ValueError):  # stderr was a terminal that has closed
        pass
    return closed


def interrupted(exc: BaseException, run_id: str, sub: Any, tree: Any, json: bool) -> None:
    """Ctrl-C, SIGTERM or SIGHUP (after `halt`): say `zapcli: interrupted`
    once, stop the tree (nothing outlives the run), say what never reached
    it; with --json the run document (one document, also when the run does
    not complete; `running`: its subagents that were still running, now
    stopped); exit 130, 143 or 129."""
    running = left_running(sub)
    if isinstance(exc, HungUp):  # the terminal closed: the note may reach nobody
        code, status, why = 128 + signal.SIGHUP, "interrupted", \
            "the terminal closed (SIGHUP); its subagents were stopped"
        said = f"run {run_id}: {why}"
    elif isinstance(exc, Terminated):
        code, status, why = 128 + signal.SIGTERM, "cancelled", "terminated (SIGTERM)"
        said = f"run {run_id} was {why}; its subagents are stopped"
    else:
        code, status, why = 128 + signal.SIGINT, "interrupted", \
            "interrupted (Ctrl-C); its subagents were stopped"
        said = f"run {run_id} stops (Ctrl-C), and its subagents with it"
    say(f"zapcli: interrupted: {said}\n")
    closed = close(tree, sub, run_id)
    if json:
        emit_run(run_id, status, why, None, sub, tree.own(), closed, running=running,
                 error={"code": "interrupted", "message": why, "exit_code": code})
    raise SystemExit(code) from None
