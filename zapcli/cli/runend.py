"""How a foreground `zapcli run` ends when it does not simply finish: the
signals it ends on like Ctrl-C (SIGTERM, SIGHUP), the note naming what still
runs, stopping the run's tree, and the one `--json` document.

Imports `zapcli.cli.output`, `zapcli.cli.runtree`, `zapcli.lifecycle.observe`,
`zapcli.errors`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Halt:
    """Whether the run was interrupted, as of this instant. A signal counts
    from the moment it is sent, not from the moment the main thread's Python
    handler runs (which waits for the GIL, held by the thread that has just
    read a person's answer): still pending in the kernel, or already caught
    by the interpreter's C handler (a byte on the wakeup pipe), or handled
    (`set`). So an answer typed after Ctrl-C is never taken for one before.
    `arm` (main thread) starts watching `watched`; `disarm` ends it.
    `confirmed` closes the last gap (the main thread took the signal from
    the kernel and was preempted before its C handler ran) by waiting for
    the main thread to run once: it runs that handler before anything else."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._watched: frozenset[int] = frozenset()
        self._pipe: tuple[int, int] | None = None
        self._previous = -1
        self.signum: int | None = None  # the first of ours seen
        self._claimed = False
        self._asked = threading.Event()  # a `confirmed` waits, or the loop ended
        self._acks = threading.Condition()
        self._asks = self._acked = 0
        self._serving = False

    def arm(self, watched: tuple[int, ...]) -> None:
        self._watched = frozenset(int(s) for s in watched)
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        self._pipe = (read, write)
        self._previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def catch(self) -> dict[int, Any]:
        """Watch and handle the run's signals (main thread); a signal its
        starter ignores (`nohup`, a shell's background job) stays ignored.
        The handlers it replaced, for `release`."""
        ours = tuple(sig for sig in SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN)
        self.arm(ours)
        return {sig: signal.signal(sig, on_signal(self)) for sig in ours}

    def release(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        self.disarm()

    def disarm(self) -> None:
        if self._pipe is None:
            return
        self.is_set()  # a signal caught meanwhile stays seen
        signal.set_wakeup_fd(self._previous)
        with self._lock:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None

    def set(self, signum: int = signal.SIGINT) -> None:
        if self.signum is None:
            self.signum = int(signum)
        self._event.set()

    def claim(self) -> bool:
        """True once: whoever ends the run on the signal (the main thread's
        handler, or the main thread finding it seen by the loop first)."""
        first, self._claimed = not self._claimed, True
        return first

    def exception(self) -> BaseException:
        """What the main thread's handler raises for the signal seen."""
        return {signal.SIGHUP: HungUp, signal.SIGTERM: Terminated}.get(
            signal.Signals(self.signum or signal.SIGINT), KeyboardInterrupt)()

    def is_set(self) -> bool:
        if self._event.is_set():
            return True
        # in the order a signal goes: sent (pending), caught (a byte), handled (set)
        if self._pending() or self._caught():
            self._event.set()
        return self._event.is_set()

    def confirmed(self, wait_s: float = 2.0) -> bool:
        """`is_set` once the main thread has run since this call: for the
        decision after a person's answer, and before a model call or a tool."""
        if self.is_set():
            return True
        if threading.current_thread() is threading.main_thread():
            return False
        with self._acks:
            if not self._serving:
                return self.is_set()
            self._asks += 1
            mine = self._asks
            self._asked.set()
            self._acks.wait_for(lambda: self._acked >= mine or not self._serving, timeout=wait_s)
        return self.is_set()

    def poking(self, body: Callable[[], None]) -> Callable[[], None]:
        """`body`, waking the main thread's `wait` as it ends."""
        def run() -> None:
            try:
                body()
            finally:
                self._asked.set()

        return run

    def wait(self, worker: threading.Thread, timeout: float) -> None:
        """The main thread waits for `worker` (run through `poking`) up to
        `timeout`, answering each `confirmed` meanwhile; a signal's handler
        raises out of it."""
        end = time.monotonic() + timeout
        with self._acks:
            self._serving = True
        try:
            while worker.is_alive() and time.monotonic() < end:
                if self._asked.wait(max(end - time.monotonic(), 0)):
                    self._asked.clear()
                    with self._acks:
                        self._acked = self._asks
                        self._acks.notify_all()
        finally:
            with self._acks:
                self._serving = False
                self._acks.notify_all()

    def _pending(self) -> bool:
        """One of ours is sent and not yet taken by any thread (this thread
        blocks them a moment: `sigpending` reports only blocked ones)."""
        if not self._watched or threading.current_thread() is threading.main_thread():
            return False  # the main thread takes its own signals before its next line
        before = signal.pthread_sigmask(signal.SIG_BLOCK, self._watched)
        try:
            pending = signal.sigpending()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        ours = [int(s) for s in pending if int(s) in self._watched]
        if ours:
            self.set(ours[0])
        return bool(ours)

    def _caught(self) -> bool:
        with self._lock:
            if self._pipe is None:
                return False
            try:
                data = os.read(self._pipe[0], 256)
            except OSError:  # empty (BlockingIOError) or closed
                return False
        ours = [b for b in data if b in self._watched]
        if ours:
            self.set(ours[0])
        return self._event.is_set()


class Terminated(Exception):
    """SIGTERM reached `zapcli run`: end like Ctrl-C, naming what still runs."""


class HungUp(Exception):  # noqa: N818 - a signal, not an error
    """SIGHUP (its terminal closed): end like Ctrl-C, naming what still runs."""


def on_signal(halted: Halt) -> Callable[[int, Any], None]:
    """The handler of Ctrl-C, SIGTERM and SIGHUP while the run's loop runs:
    `halted` is set first (the loop, its tools and its spawns stop at it),
    then the main thread is interrupted to end the run."""
    def handler(signum: int, frame: Any) -> None:
        halted.set(signum)
        if not halted.claim():  # the run already ends on it
            return
        if signum == signal.SIGHUP:
            raise HungUp()
        if signum == signal.SIGTERM:
            raise Terminated()
        raise KeyboardInterrupt()

    return handler


def _still(signum: int, frame: Any) -> None:
    """A second signal while the run stops: the stop goes on (it is bounded by the grace period)."""


def halt(halted: Halt, *stoppers: Any) -> None:
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
    `denied_approvals`: its children's requests and its own calls denied
    without asking (nobody could be asked);
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


def close(tree: Any, sub: Any, run_id: str, stopped: bool = False) -> Any:
    """End the run's tree (nothing outlives the run) and say what never
    reached it. A child's pending approval request is denied with that reason
    as it is stopped (`lifecycle.ending`)."""
    from zapcli.cli.runtree import say_undelivered

    running = left_running(sub)
    if running:
        say(f"zapcli: note: stopping {len(running)} subagent(s) of this run still "
            f"running ({' '.join(running)}): a run's subagents never outlive it\n")
    closed = tree.close(sub, stopped)
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
    closed = close(tree, sub, run_id, stopped=True)
    if json:
        emit_run(run_id, status, why, None, sub, tree.own(), closed, running=running,
                 error={"code": "interrupted", "message": why, "exit_code": code})
    raise SystemExit(code) from None


def not_started(exc: Any, run_id: str, sub: Any, json: bool) -> None:
    """A run that failed before its model's first call (its sandbox refused,
    no model client): with --json its run document all the same — a
    `failed` run, the reason, exit 1 (docs/how-to/delegate.md) — and the
    reason on stderr too; a usage error stays one (exit 2)."""
    from zapcli.errors import UsageError

    if not json or isinstance(exc, UsageError):
        return
    from zapcli import ledger

    sys.stderr.write(f"zapcli: error: run {run_id} failed: {exc.message}\n")
    emit_run(run_id, "failed", exc.message, None, sub, ledger.run_tokens(run_id))
    raise SystemExit(1)


def doing(sink: Any) -> tuple[str, bool]:
    """What the run was doing when its time ran out — a tool call not yet
    answered (its `subagent` call waiting on subagents), else the model —
    and whether it was a tool call."""
    names = sorted(set(sink.running.values()))
    if not names:
        return "(waiting for the model)", False
    said = " and ".join(f"`{n}`" for n in names)
    return f"(in its {said} call{'s' if len(sink.running) > 1 else ''}, not yet answered)", True
