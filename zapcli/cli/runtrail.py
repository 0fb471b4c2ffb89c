"""The trail of a foreground `zapcli run` (`zapcli.trail.runs`): what its own
agent did, so the run is the root of its tree in traces, timelines and ATIF.

Imports `zapcli.trail`, `zapcli.tracecontext`, `zapcli.redact`;
`zapcli.telemetry.live` only when OTEL_* asks for traces. Sets the run's
TRACEPARENT in this process's environment, so its tools' commands and the
subagents it spawns are children of its `invoke_agent` span.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from zapcli import tracecontext
from zapcli.errors import ZapcliError
from zapcli.redact import mark, secret_values
from zapcli.trail import runs
from zapcli.trail.model import Outcome, Status
from zapcli.trail.writer import TrailWriter


class RunTrail:
    """Appends the run's records; `end` writes its terminal status once."""

    def __init__(self, run_id: str, writer: TrailWriter | None, live: Any = None):
        self.run_id, self.writer, self.live = run_id, writer, live
        self.ended = False

    def append(self, rtype: str, rec: dict[str, Any]) -> None:
        if self.writer is not None and not self.ended:
            self.writer.append(rtype, rec)

    def end(self, status: str, reason: str | None) -> None:
        if self.ended or self.writer is None:
            return
        self.ended = True
        parsed = Status.parse(status) or Status.FAILED
        try:
            self.writer.end(Outcome(parsed, 0 if parsed == Status.COMPLETED else 1, reason))
            self.writer.close()
        except OSError:
            pass
        if self.live is not None:
            self.live.stop()


def open_run(run_id: str, task: str, fields: dict[str, Any], *, cwd: str, workspace: str,
             approval: str, timeout_s: float | None = None) -> RunTrail:
    """Create the run's trail (a warning, never a failure, when it cannot be)."""
    trace = tracecontext.new()
    os.environ.update(tracecontext.work_env(trace))
    record = {"session": run_id, "cli": "zapcli", "task": mark(task), "cwd": cwd,
              "workspace": workspace, "approval": approval, "agent": fields.get("agent"),
              "model": fields.get("model"), "definition": fields.get("definition"), "trace": trace,
              "genai_provider": fields.get("genai_provider"), "timeout_s": timeout_s}
    try:
        path = runs.create(run_id, record, secret_values())
        writer = TrailWriter(path, start_seq=0, secrets=secret_values())
    except (ZapcliError, OSError) as exc:
        why = getattr(exc, "message", None) or str(exc)
        sys.stderr.write(f"zapcli: warning: this run's trail is not kept ({why}); "
                         "its timeline and trace will lack the run itself\n")
        return RunTrail(run_id, None)
    from zapcli.supervisor.launch import process_create_time

    # pid and create time: a claim on the board held by the run goes back once it is gone
    writer.append("start", {"pid": os.getpid(), "create_time": process_create_time(os.getpid()),
                            "mono": time.monotonic()})
    live = None
    if tracecontext.export_wanted():
        from zapcli.telemetry.live import start

        live = start(path, run_id)
    return RunTrail(run_id, writer, live)


def status_of(exc: BaseException) -> tuple[str, str]:
    """How a run that stopped by an exception ends in its trail."""
    if isinstance(exc, KeyboardInterrupt) or (isinstance(exc, SystemExit) and exc.code == 130):
        return "cancelled", "interrupted (Ctrl-C)"
    if isinstance(exc, SystemExit) and exc.code == 143:
        return "cancelled", "terminated (SIGTERM)"
    if isinstance(exc, SystemExit) and exc.code == 129:
        return "cancelled", "the terminal closed (SIGHUP)"
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return ("timeout" if "timed out" in message else "failed"), message
