"""Agent CLIs as backends, runner side (docs/explanation/rules.md#agent-clis): `run_cli` is
`CliBackend.run` — claude, codex, gemini, opencode, qwen, pi, a plugin's CLI, or a
wrapper config.yaml defines, as the subagent's work.

Imports `zapcli.backends.clis.base`, `zapcli.backends.cli_home`,
`cli_stream`, `cli_request`, `cli_limits` (its end on its provider's limits),
`zapcli.budget` (its meter), `zapcli.supervisor`, `zapcli.trail`. The CLI is a
child of the runner in the runner's process group (so `kill` reaches it with
the group), its stdout a file in its home that is followed from before stdin
is written, stdin fed from its own thread and closed after the last byte. Its terminal event ends the work: the
report, usage and status are recorded, the CLI gets a short grace
(ZAPCLI_BACKEND_EXIT_GRACE_S, default 3 s) to exit and then its whole tree is
ended, with whatever it left running. The deadline and SIGTERM end the tree
too (timeout / cancelled); an exit without a terminal event is failed with
the last stderr lines.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli import tracecontext
from zapcli.backends import cli_home, cli_limits, cli_sandbox
from zapcli.backends.base import RunContext
from zapcli.backends.cli_stream import LinePump, Sink, TailPump
from zapcli.backends.clis.base import Cli, CliLaunch, CliRequest, EventParser
from zapcli.supervisor.capture import feed
from zapcli.supervisor.kill import end_marked, kill_tree
from zapcli.supervisor.launch import process_create_time
from zapcli.trail.model import SIGTERM_REASON, Outcome, Status

DEFAULT_EXIT_GRACE_S = 3.0
PUMP_JOIN_S = 30.0  # parsing what is left after the exit (a big last burst)
# how long the end waits for a `--version` still running (uncached): as long as the probe
# may take — a full run saw gemini's first `--version` on a loaded machine outlast 10 s
VERSION_JOIN_S = 20.0
TICK_S = 0.05


def exit_grace() -> float:
    """Seconds a CLI may take to exit after its terminal event."""
    try:
        value = float(os.environ.get("ZAPCLI_BACKEND_EXIT_GRACE_S", ""))
    except ValueError:
        return DEFAULT_EXIT_GRACE_S
    return value if 0 <= value <= 600 else DEFAULT_EXIT_GRACE_S


def run_cli(backend: Cli, ctx: RunContext) -> Outcome:
    """Run the agent CLI the spawn record's frozen `backend` ({name, command,
    format}) names, with `backend`'s flags and parser: `CliBackend.run`."""
    from zapcli.backends import cli_request

    found = ctx.spawn.backend or {}
    command = found.get("command")
    if not (isinstance(command, list) and command and found.get("format") == backend.event_format):
        return Outcome(Status.FAILED, None, "the spawn record names no agent CLI to run "
                       f"(backend {ctx.spawn.cli!r}); spawn it again")
    command = [str(c) for c in command]
    try:
        plan = cli_request.build(ctx, backend)
    except cli_request.CannotResume as exc:
        return Outcome(Status.FAILED, None, str(exc))
    box = cli_sandbox.confine(ctx, backend)
    if isinstance(box, Outcome):
        return box
    req = box.request(plan.request) if box is not None else plan.request
    try:
        launch = backend.launch(req, command)
        if tracecontext.export_wanted(req.env):  # its own spans join its subagent's trace
            launch.diagnostics += [{"dimension": "telemetry", "name": backend.name, "message": said}
                                   for said in _join_trace(backend, req, launch, box)]
        cli_home.write_files(req.config_home, launch.files)
        if box is not None:
            try:
                launch = box.wrap(launch, req, command)
            except cli_sandbox.Unshowable as exc:
                return Outcome(Status.FAILED, None, str(exc))
            except OSError as exc:  # the control files' placeholders could not be made
                return Outcome(Status.FAILED, None, "the sandbox could not hold the control "
                                                    f"files read-only: {exc}; nothing was run")
        sandbox = [*(box.diagnostics() if box is not None else []),
                   *backend.sandbox_diagnostics(req)]
        for diag in [*plan.diagnostics, *launch.diagnostics, *sandbox]:
            ctx.writer.append("diagnostic", diag)
        run = _Run(ctx, backend, backend.parser(req), req, launch, command)
        run.session_extra = plan.session_extra
        return run.supervise()
    finally:
        if box is not None:
            box.close()


def _meter(ctx: RunContext) -> Any:
    """The subagent's meter (`zapcli.budget.meter`): prices what its CLI says
    no cost for, and holds it to its budget — `--max-tokens`, `--max-cost`, or
    the allotment its tree gave it — with what its own subagents hold."""
    from zapcli.budget.meter import Meter

    spawn = ctx.spawn
    price = spawn.raw.get("price")
    max_cost = spawn.raw.get("max_cost")
    max_cost = max_cost if isinstance(max_cost, (int, float)) else None
    held = None
    if spawn.max_tokens is not None or max_cost is not None:
        from zapcli.budget.allot import Held

        held = Held(ctx.sid)
    return Meter(spawn.model, price=price if isinstance(price, dict) else None,
                 max_tokens=spawn.max_tokens, max_cost=max_cost, held=held)


def _join_trace(backend: Cli, req: CliRequest, launch: CliLaunch,
                box: cli_sandbox.Confined | None) -> list[str]:
    """The CLI told to export its own spans under its subagent's, unless its
    sandbox's network is off: then it reaches only its model, its exporter
    no collector (and may stall retrying one), so it is not turned on."""
    if box is not None and not box.policy.network:
        return [f"{backend.name}'s own spans are not exported: its definition turns the sandbox's "
                "network off but for its model's endpoint, so no collector is in reach; only "
                "zapcli's spans of this subagent are sent (with `network: true` its spans join them)"]
    return backend.join_trace(req, launch)


@dataclass
class _Run:
    ctx: RunContext
    backend: Cli
    parser: EventParser
    req: CliRequest
    launch: CliLaunch
    command: list[str]
    session_extra: dict[str, Any] = field(default_factory=dict)
    terminal_at: float | None = None
    _session_written: bool = False
    _version_written: bool = False
    _seen: int = 0
    pump: LinePump | None = None
    _version: str | None = None
    _version_thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def supervise(self) -> Outcome:
        ctx = self.ctx
        me = os.getpid()
        self.me_ctime = process_create_time(me)
        self.sink = Sink(ctx.writer, ctx.out, _meter(ctx), self.parser)
        self.sink.on_usage = cli_limits.Succeeded(ctx.spawn.session, ctx.spawn.raw.get("provider"))
        # The CLI's stdout is a file we follow, not a pipe: a node CLI in its
        # own session may exit before a pipe's pending writes are flushed
        # (measured: gemini lost its answer 3 times in 8 under load), and a
        # file never makes it wait for a slow reader (C20).
        # Beside its private home, not in it: out of view of what the CLI runs (which
        # cannot reach the CLI's own fd either: zapcli.sandbox.execonly), and appended to.
        stream = Path(f"{self.req.config_home}.stdout.jsonl")
        write_fd = os.open(stream, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
                           | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            proc = subprocess.Popen(
                # PWD names where it runs: a CLI that reads it (opencode) would work in the
                # caller's folder, outside its --worktree tree
                self.launch.argv, env={**self.launch.env, "PWD": self.req.cwd}, cwd=self.req.cwd,
                close_fds=True,
                stdin=subprocess.PIPE if self.launch.stdin is not None else subprocess.DEVNULL,
                stdout=write_fd, stderr=subprocess.PIPE)
        except OSError as exc:
            return Outcome(Status.FAILED, None, f"could not start {self.command[0]}: {exc}")
        finally:
            os.close(write_fd)
        assert proc.stderr is not None
        exited = threading.Event()
        out = LinePump(os.open(stream, os.O_RDONLY | os.O_CLOEXEC), self.parser, self.sink,
                       self._after_event, done=exited)
        self.pump = out
        err = TailPump(os.dup(proc.stderr.fileno()), ctx.err)
        proc.stderr.close()
        out.start()
        err.start()
        if self.launch.stdin is not None and proc.stdin is not None:  # after the pumps run
            feed(os.dup(proc.stdin.fileno()), self.launch.stdin, "cli-stdin")
            proc.stdin.close()
        self._version_thread = threading.Thread(target=self._find_version, name="cli-version",
                                                daemon=True)
        self._version_thread.start()
        ending = self._wait(proc)
        self._end_leftovers()
        exited.set()
        out.thread.join(PUMP_JOIN_S)
        stream.unlink(missing_ok=True)  # everything it said is in the trail now
        err.thread.join(PUMP_JOIN_S)
        tail = err.text()
        return cli_limits.judge(ctx, self.parser, self._outcome(proc, ending, tail), tail,
                                self.launch.env, self.sink.tokens)

    # -- while it runs ------------------------------------------------------

    def _wait(self, proc: subprocess.Popen[bytes]) -> str | None:
        """Until the CLI exits or must be ended; returns why we ended it
        (None: it exited by itself)."""
        ctx = self.ctx
        grace = exit_grace()
        while True:
            if self.sink.checks:  # a budget: its stop is acted on at once, not at the next tick
                self.sink.passed_it.wait(TICK_S)
                if proc.poll() is not None:
                    return None
            else:
                try:
                    proc.wait(TICK_S)
                    return None
                except subprocess.TimeoutExpired:
                    pass
            now = time.monotonic()
            if ctx.terminated.is_set():
                self._end_tree(ctx.stop_grace())
                return "cancelled"
            if now >= ctx.deadline_mono:
                self._end_tree(ctx.spawn.kill_grace_s)
                return "timeout"
            if self.parser.terminal:
                self.terminal_at = self.terminal_at or now
                if now - self.terminal_at >= grace:
                    self._end_tree(min(ctx.spawn.kill_grace_s, 1.0))
                    return "after_terminal"
            elif self.sink.over is not None:
                self._end_tree(ctx.spawn.kill_grace_s)
                return "budget"

    def _end_tree(self, grace_s: float) -> None:
        """TERM the CLI and everything under the runner, KILL after the grace."""
        kill_tree(os.getpid(), self.me_ctime, grace_s, include_root=False)

    def _end_leftovers(self) -> None:
        """Whatever the CLI left running, in our group, under us, or re-parented
        to init with the subagent's marker in its environment."""
        kill_tree(os.getpid(), self.me_ctime, 1.0, include_root=False)
        end_marked(self.ctx.sid, 1.0)

    def _after_event(self) -> None:
        """The `session` record, once the CLI has said its session id and its
        version (or one more event came without it)."""
        if self._session_written or not self.parser.session_id:
            return
        self._seen += 1
        if self.parser.version or self._seen >= 2:
            self._write_session()

    def _write_session(self) -> None:
        with self._lock:
            version = getattr(self.parser, "version", None) or self._version
            fields: dict[str, Any] = {"cli": self.ctx.spawn.cli,
                                      "session_id": self.parser.session_id,
                                      "version": version, "model": getattr(
                                          self.parser, "model", None) or self.req.model,
                                      "config_home": str(self.req.config_home),
                                      **self.session_extra}
            self.ctx.writer.append("session", fields)
            self._session_written = True
            if self.pump is not None:
                self.pump.on_event = None  # no more calls needed per line
            self._version_written = version is not None

    def _find_version(self) -> None:
        self._version = cli_home.version(
            self.backend.version_argv(self.command), self.command,
            lambda scratch: self.backend.probe_env(self.req.env, scratch))

    # -- the end --------------------------------------------------------------

    def _outcome(self, proc: subprocess.Popen[bytes], ending: str | None,
                 stderr_tail: str) -> Outcome:
        code = proc.wait()
        ctx = self.ctx
        if self.parser.session_id and not self._version_written and self._version_thread:
            # `--version` runs beside the CLI; a first run on a busy machine may still be at it
            self._version_thread.join(VERSION_JOIN_S)
        if self.parser.session_id and (not self._session_written or (
                not self._version_written and self._version)):
            self._write_session()
        if ending is None and ctx.terminated.is_set() and not self.parser.terminal:
            ending = "cancelled"  # the SIGTERM reached the CLI first (it is in our group)
        if not self.parser.terminal:  # calls it said but never reported in full still cost
            self.sink.record_unreported()
        if ending in ("cancelled", "timeout", "budget") and not self.parser.terminal:
            why = {"cancelled": (Status.CANCELLED, f"{SIGTERM_REASON}; the CLI's process tree "
                                 "was ended"),
                   "timeout": (Status.TIMEOUT, "deadline reached; the CLI's process tree was "
                               "ended"),
                   "budget": (Status.FAILED, self.sink.over or "token budget")}[ending]
            self._report(self.parser.finish(code, stderr_tail).report if ending == "budget"
                         else None)
            return Outcome(why[0], None, why[1])
        result = self.parser.finish(code, stderr_tail)
        self._report(result.report)
        exit_code = code if code is not None and code >= 0 else None
        drift = self.pump.drift() if self.pump is not None else None
        if drift is not None:  # a changed stream is never read as a success (docs/explanation/rules.md#plugins)
            last = [ln.strip() for ln in stderr_tail.splitlines() if ln.strip()][-1:]
            if code and last:
                drift += f"; it exited with code {code}: {last[0][:300]}"
            return Outcome(Status.FAILED, exit_code, self._drift_reason(drift))
        if result.status == Status.COMPLETED:
            return Outcome(Status.COMPLETED, 0, None)
        known = self.backend.exit_reasons.get(code) if code is not None else None
        if known and not self.parser.terminal:
            return Outcome(Status.FAILED, exit_code, known)
        return Outcome(Status.FAILED, exit_code,
                       result.reason or f"{ctx.spawn.cli} failed (exit code {code})")

    def _drift_reason(self, drift: str) -> str:
        from zapcli.backends.clis.base import tested_text

        if self._version_thread is not None:
            self._version_thread.join(VERSION_JOIN_S)
        version = getattr(self.parser, "version", None) or self._version or "of unknown version"
        tested = (f"; zapcli's {self.backend.name} backend was tested with "
                  f"{tested_text(self.backend.tested)}" if self.backend.tested else "")
        return (f"stream drift: {self.ctx.spawn.cli} {version} printed events zapcli does not "
                f"know — {drift}{tested}. Its output changed, so its result is not trusted: "
                "use a tested version (zapcli doctor shows them), or a zapcli that knows this one")

    def _report(self, report: str | None) -> None:
        if report is None:
            self.sink.end_with("")
            return
        self.ctx.writer.write_sync("report", {"text": report}, retry_s=5.0)
        self.sink.end_with(report)
