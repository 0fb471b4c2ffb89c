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
from collections.abc import Callable
from typing import Any

from zapcli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from zapcli.ops.status import load
from zapcli.redact import secret_values
from zapcli.supervisor.capture import CappedFile
from zapcli.supervisor.kill import kill_tree
from zapcli.supervisor.launch import process_create_time
from zapcli.trail import store
from zapcli.trail.model import Outcome, Status
from zapcli.trail.writer import TrailWriter


def _open_capture(sid: str, suffix: str, secrets: list[bytes]) -> CappedFile:
    path = store.path_for(sid, suffix)
    try:
        fd = store.create_exclusive(path)
    except FileExistsError:
        fd = store.open_append(path)
    return CappedFile(fd, secrets)


CLAIM_WAIT_S = 5.0


def _claim(sid: str) -> str | None:
    """None when this process is the one zapcli launched for `sid`, else why not.

    The launcher appends a `process` record naming our pid right after the
    fork; running `run --subagent` by hand on a live or queued subagent would
    run its task twice, so it is refused.
    """
    from zapcli.supervisor.liveness import is_alive

    me = os.getpid()
    give_up = time.monotonic() + CLAIM_WAIT_S
    while True:
        s = load(sid)
        if s.final is not None:
            return f"{sid} already ended ({s.final.get('status')})"
        for rec in (s.start, s.process):
            if rec and rec.get("pid") != me and is_alive(rec.get("pid"), rec.get("create_time")):
                return f"{sid} is already running (pid {rec.get('pid')})"
        if s.process and s.process.get("pid") == me:
            return None
        if time.monotonic() > give_up:
            return (f"{sid} was not launched for this process; `run --subagent` is started by "
                    "`zapcli spawn` and the queue, not by hand")
        time.sleep(0.02)


def _watchdog(sid: str, writer: TrailWriter, *, deadline: float, terminated: threading.Event,
              done: threading.Event, grace_s: float, after: Callable[[], None]) -> None:
    """Enforce the deadline and SIGTERM even while the agent is blocked in a model
    call: the loop stops by itself between steps; if it has not within a
    second, record the end, kill our own work and exit."""
    while not done.wait(0.1):
        if terminated.is_set():
            status, reason = "cancelled", "its runner got SIGTERM (not from zapcli kill)"
        elif time.monotonic() >= deadline:
            status, reason = "timeout", "deadline reached (the step in progress was abandoned)"
        else:
            continue
        if done.wait(1.0):
            return
        writer.end(Outcome(Status(status), None, reason), retry_s=2.0)
        writer.close()
        _end_now(grace_s, after)


def _end_now(grace_s: float, after: Callable[[], None]) -> None:
    """Kill our own work (not us), free our slot, and exit without unwinding:
    the last step of the watchdog and of the backstop, once the end is recorded."""
    me = os.getpid()
    kill_tree(me, process_create_time(me), min(grace_s, 1.0), include_root=False)
    after()
    os._exit(EXIT_FAILED)


BACKSTOP_S = 2.0  # after the deadline, beyond the watchdog's own 1 s


def _arm_backstop(sid: str, deadline: float, grace_s: float, after: Callable[[], None]) -> None:
    """A SIGALRM shortly after the deadline, for when the watchdog thread cannot
    run: a tool holding the interpreter (a runaway regex in `grep`) starves
    every other thread, but C code such as the regex engine still checks for
    signals, so the handler runs in the main thread and ends the subagent."""

    def backstop(signum: int, frame: Any) -> None:
        # not through the writer: the stuck thread may hold its lock
        store.end(store.path_for(sid), Outcome(Status.TIMEOUT, None, "deadline reached; the "
                                               "runner was stuck in a step and was stopped"))
        _end_now(grace_s, after)

    signal.signal(signal.SIGALRM, backstop)
    signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 0.0) + BACKSTOP_S)


def main(sid: str) -> int:
    """Run subagent `sid` to its end. Returns the process exit code."""
    started_mono = time.monotonic()
    refusal = _claim(sid)
    if refusal is not None:
        sys.stderr.write(f"zapcli: error: {refusal}\n")
        return EXIT_USAGE
    s = load(sid)
    spawn = s.spawn
    secrets = secret_values()
    writer = TrailWriter(store.path_for(sid), start_seq=max(s.last_seq, 1), secrets=secrets)
    terminated = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: terminated.set())
    signal.signal(signal.SIGINT, lambda *_: terminated.set())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # `spawn` holds these signals while it launches us, and a signal mask is
    # inherited: let them in now (one that is pending reaches our handlers).
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    out = _open_capture(sid, ".out", secrets)
    err = _open_capture(sid, ".err", secrets)
    session, workspace = str(spawn.get("session", "")), str(spawn.get("workspace") or "/")
    timeout_s = float(spawn.get("timeout_s") or 300)
    grace_s = float(spawn.get("kill_grace_s") or 3)
    deadline = started_mono + timeout_s
    pid = os.getpid()
    # Under the decision lock `kill` takes to record a cancel: either the cancel
    # comes first and nothing starts, or `start` does and the cancel follows it.
    with store.locked(store.path_for(sid)):
        if load(sid).final is not None:  # killed between its launch and now
            writer.close()
            out.close()
            err.close()
            return EXIT_FAILED
        writer.write_sync("start", {"pid": pid, "create_time": process_create_time(pid),
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
            outcome = Outcome(Status.FAILED, None, missing)
        elif spawn.get("cli") == "sh":
            from zapcli.backends import sh

            outcome = sh.run(task, cwd=str(spawn.get("cwd") or "/"), out=out, err=err,
                             deadline_mono=deadline, grace_s=grace_s, terminated=terminated,
                             stop_grace=lambda: _kill_grace(sid, grace_s))
        else:
            from zapcli.backends import agent_run

            done = threading.Event()
            leave = lambda: _after_exit(session, sid, workspace, busy=True)  # noqa: E731
            threading.Thread(target=_watchdog, name="watchdog", daemon=True, kwargs=dict(
                sid=sid, writer=writer, deadline=deadline, terminated=terminated, done=done,
                grace_s=grace_s, after=leave)).start()
            _arm_backstop(sid, deadline, grace_s, leave)
            try:
                outcome = agent_run.run(sid, {**spawn, "task": task}, writer=writer, out=out,
                                        err=err, deadline_mono=deadline, terminated=terminated)
            finally:
                done.set()
                signal.setitimer(signal.ITIMER_REAL, 0)
    except Exception as exc:  # the child's catch-all: a result is never lost
        traceback.print_exc(file=sys.stderr)
        outcome = Outcome(Status.FAILED, None, f"internal error: {type(exc).__name__}: {exc}")
    out.close()
    err.close()
    writer.end(outcome, retry_s=max(grace_s, 5.0), stdout_bytes=out.written,
               stderr_bytes=err.written, stdout_kept=out.kept, stderr_kept=err.kept)
    writer.close()
    _after_exit(session, sid, workspace, busy=terminated.is_set())
    return EXIT_OK if outcome.status == Status.COMPLETED else EXIT_FAILED


def _kill_grace(sid: str, default: float) -> float:
    """The grace a `zapcli kill --grace` asked for (recorded with the cancel,
    before its SIGTERM), so the command gets what the user gave; else ours."""
    final = load(sid).final or {}
    grace = final.get("grace_s")
    if final.get("by") == "kill" and isinstance(grace, (int, float)) and not isinstance(grace, bool):
        return float(grace)
    return default


def _after_exit(session: str, sid: str, workspace: str, busy: bool = False) -> None:
    """Free our slot: start the next queued subagent; retention if idle."""
    try:
        from zapcli.config import load_settings
        from zapcli.ops import gc, queue
        from zapcli.ops import session as sessions

        sessions.deactivate(session, sid)
        from pathlib import Path

        settings = load_settings(Path(workspace), lenient=True)
        queue.drain(session, settings)
        # Retention deletes trails by `max_kept`: never on a guess, so not
        # while a config layer is invalid; nor when killed (exit within grace).
        if not busy and not settings.problems:
            gc.collect(settings, opportunistic=True)
    except Exception:
        traceback.print_exc(file=sys.stderr)
