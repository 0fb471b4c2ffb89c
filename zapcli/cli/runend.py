"""How a foreground `zapcli run` ends when it does not simply finish: the
signals it ends on like Ctrl-C (SIGTERM, SIGHUP), the note naming what still
runs, stopping the run's tree, and the one `--json` document.

Imports `zapcli.cli.output`, `zapcli.cli.runtree`, `zapcli.lifecycle.observe`,
`zapcli.errors`.
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
             tokens: Any, tree: Any = None, **extra: Any) -> None:
    """The one `run --json` document: `tokens` are the run's own model calls,
    `tree_tokens` the run's and every subagent's (what `usage` shows);
    `undelivered`: results its model never saw; `denied_approvals`: its
    children's requests denied without asking; `extra` keys (`running`,
    `error`) when the run did not complete."""
    from zapcli.cli.output import emit_json

    undelivered, figures = tree if tree is not None else ([], None)
    from zapcli.render.docschema import stamp

    emit_json(stamp("run", {"run_id": run_id, "status": status, "reason": reason, "report": report,
               "subagents": list(sub.started), "tokens": tokens.doc(),
               "tree_tokens": figures.doc() if figures is not None else None,
               "undelivered": undelivered, "denied_approvals": list(sub.denied), **extra}))


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
    """Ctrl-C, SIGTERM or SIGHUP: stop the tree (nothing outlives the run),
    say what never reached it; with --json the run document (one document,
    also when the run does not complete) and the exit code. `running`: the
    subagents that were still running (now stopped)."""
    running = left_running(sub)
    if isinstance(exc, HungUp):  # the terminal closed: as Ctrl-C, the note may reach nobody
        why = "the terminal closed (SIGHUP); its subagents were stopped"
        say(f"zapcli: run {run_id}: {why}\n")
        closed = close(tree, sub, run_id)
        if json:
            emit_run(run_id, "interrupted", why, None, sub, tree.own(), closed, running=running,
                     error={"code": "interrupted", "message": why, "exit_code": HUP_EXIT})
        raise SystemExit(HUP_EXIT) from None
    if isinstance(exc, Terminated):
        say(f"zapcli: run {run_id} was terminated (SIGTERM)\n")
        closed = close(tree, sub, run_id)
        if json:
            emit_run(run_id, "cancelled", "terminated (SIGTERM)", None, sub, tree.own(), closed,
                     running=running)
        raise SystemExit(128 + signal.SIGTERM) from None
    say("zapcli: interrupted\n")
    closed = close(tree, sub, run_id)
    if not json:
        raise exc
    why = "interrupted (Ctrl-C); its subagents were stopped"
    emit_run(run_id, "interrupted", why, None, sub, tree.own(), closed, running=running,
             error={"code": "interrupted", "message": why, "exit_code": 130})
    raise SystemExit(130) from None
