"""`zapcli run --subagent --id ID`: the child's main.

Imports `zapcli.trail`, `zapcli.supervisor`, `zapcli.backends.sh`, `zapcli.ops`
(queue drain, retention) and the agent backend lazily. Reads its task from its
own `spawn` record (never argv), writes `start`, runs the backend, and writes
the terminal `status` synchronously (fsync) before it exits, whatever happens.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback

from zapcli.errors import EXIT_FAILED, EXIT_OK
from zapcli.ops.status import load
from zapcli.redact import secret_values
from zapcli.supervisor.capture import CappedFile
from zapcli.supervisor.launch import process_create_time
from zapcli.trail import store
from zapcli.trail.writer import TrailWriter


def _open_capture(sid: str, suffix: str, secrets: list[bytes]) -> CappedFile:
    path = store.path_for(sid, suffix)
    try:
        fd = store.create_exclusive(path)
    except FileExistsError:
        fd = store.open_append(path)
    return CappedFile(fd, secrets)


def main(sid: str) -> int:
    """Run subagent `sid` to its end. Returns the process exit code."""
    started_mono = time.monotonic()
    s = load(sid)
    spawn = s.spawn
    if s.final is not None:
        return EXIT_OK  # ended (e.g. cancelled) before it ever started
    secrets = secret_values()
    writer = TrailWriter(store.path_for(sid), start_seq=max(s.last_seq, 1), secrets=secrets)
    terminated = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: terminated.set())
    signal.signal(signal.SIGINT, lambda *_: terminated.set())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    out = _open_capture(sid, ".out", secrets)
    err = _open_capture(sid, ".err", secrets)
    timeout_s = float(spawn.get("timeout_s") or 300)
    grace_s = float(spawn.get("kill_grace_s") or 3)
    deadline = started_mono + timeout_s
    pid = os.getpid()
    writer.append("start", {"pid": pid, "create_time": process_create_time(pid),
                            "mono": started_mono, "deadline_mono": deadline,
                            "definition": spawn.get("definition"),
                            "tools": (spawn.get("grant") or {}).get("tools", []),
                            "diagnostics": len(spawn.get("diagnostics") or [])})
    from zapcli.redact import MissingSecret, unmark

    try:
        task = unmark(str(spawn["task"]))
    except MissingSecret as exc:
        task = None
        missing = f"the task uses the value of ${exc.args[0]}, which is not set in this subagent's environment"
    try:
        if task is None:
            from zapcli.backends.sh import Outcome

            outcome = Outcome("failed", None, missing)
        elif spawn.get("cli") == "sh":
            from zapcli.backends import sh

            outcome = sh.run(task, cwd=str(spawn.get("cwd") or "/"), out=out, err=err,
                             deadline_mono=deadline, grace_s=grace_s, terminated=terminated)
        else:
            from zapcli.backends import agent_run

            outcome = agent_run.run(sid, {**spawn, "task": task}, writer=writer, out=out, err=err,
                                    deadline_mono=deadline, terminated=terminated)
    except Exception as exc:  # the child's catch-all: a result is never lost
        traceback.print_exc(file=sys.stderr)
        from zapcli.backends.sh import Outcome

        outcome = Outcome("failed", None, f"internal error: {type(exc).__name__}: {exc}")
    out.close()
    err.close()
    fields = {"status": outcome.status, "exit_code": outcome.exit_code, "reason": outcome.reason,
              "mono": time.monotonic(), "stdout_bytes": out.written, "stderr_bytes": err.written,
              "stdout_kept": out.kept, "stderr_kept": err.kept}
    already = load(sid).final
    if already is None:
        writer.write_sync("status", fields, retry_s=max(grace_s, 5.0))
    writer.close()
    _after_exit(str(spawn.get("session", "")), sid, str(spawn.get("workspace") or "/"))
    return EXIT_OK if outcome.status == "completed" else EXIT_FAILED


def _after_exit(session: str, sid: str, workspace: str) -> None:
    """Free our slot: start the next queued subagent; retention if idle."""
    try:
        from zapcli.config import load_settings
        from zapcli.ops import gc, queue
        from zapcli.ops import session as sessions

        sessions.deactivate(session, sid)
        from pathlib import Path

        settings = load_settings(Path(workspace))
        queue.drain(session, settings)
        gc.collect(settings, opportunistic=True)
    except Exception:
        traceback.print_exc(file=sys.stderr)
