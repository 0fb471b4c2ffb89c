"""The runner's guards for in-process work (the built-in agent): a watchdog
thread for the deadline and SIGTERM, and a SIGALRM backstop for when no
thread can run.

Imports `zapcli.trail`, `zapcli.supervisor`. Both end the subagent through
the trail (the first terminal status wins), end the runner's own work, free
its slot and exit without unwinding.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from zapcli.errors import EXIT_FAILED
from zapcli.supervisor.kill import kill_tree
from zapcli.supervisor.launch import process_create_time
from zapcli.trail import ending, store
from zapcli.trail.model import SIGTERM_REASON, Outcome, Status
from zapcli.trail.writer import TrailWriter

BACKSTOP_S = 2.0  # after the deadline, beyond the watchdog's own 1 s


def watchdog(writer: TrailWriter, *, deadline: float, terminated: threading.Event,
             done: threading.Event, grace_s: float, after: Callable[[], None]) -> None:
    """Enforce the deadline and SIGTERM even while the agent is blocked in a model
    call: the loop stops by itself between steps; if it has not within a
    second, record the end, kill our own work and exit."""
    while not done.wait(0.1):
        if terminated.is_set():
            status, reason = Status.CANCELLED, SIGTERM_REASON
        elif time.monotonic() >= deadline:
            status, reason = Status.TIMEOUT, "deadline reached (the step in progress was abandoned)"
        else:
            continue
        if done.wait(1.0):
            return
        writer.end(Outcome(status, None, reason), retry_s=2.0)
        writer.close()
        end_now(grace_s, after)


def end_now(grace_s: float, after: Callable[[], None]) -> None:
    """Kill our own work (not us), free our slot, and exit without unwinding:
    the last step of the watchdog and of the backstop, once the end is recorded."""
    me = os.getpid()
    kill_tree(me, process_create_time(me), min(grace_s, 1.0), include_root=False)
    after()
    os._exit(EXIT_FAILED)


STUCK_REASON = "deadline reached; the runner was stuck in a step and was stopped"


def arm_backstop(sid: str, deadline: float, grace_s: float, after: Callable[[], None],
                 reason: str = STUCK_REASON) -> None:
    """A SIGALRM shortly after the deadline, for when the watchdog thread cannot
    run: a tool holding the interpreter (a runaway regex in `grep`, or in the
    output-schema check) starves every other thread, but C code such as the
    regex engine still checks for signals, so the handler runs in the main
    thread and ends the subagent (`timeout`, `reason`)."""

    def backstop(signum: int, frame: Any) -> None:
        # not through the writer: the stuck thread may hold its lock
        ending.end(store.path_for(sid), Outcome(Status.TIMEOUT, None, reason))
        end_now(grace_s, after)

    signal.signal(signal.SIGALRM, backstop)
    signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 0.0) + BACKSTOP_S)


def disarm_backstop() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
