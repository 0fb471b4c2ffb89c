"""`zapcli run TASK`: the built-in agent in the foreground, with the subagent tool.

Imports `zapcli.agent`, `zapcli.providers`, `zapcli.tools`, `zapcli.capabilities`
lazily (only this command pays for them). Text streams to stdout, tool
activity to stderr. Everything it starts belongs to its own run id
(ZAPCLI_SESSION), whose ledger collects its own tokens and its subagents'.
Approvals ask on a terminal; without one they are denied with a reason. The
subagents' approval requests are asked there too, at once (`zapcli.cli.watch`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from zapcli.agent.types import Verdict
from zapcli.approvals import Policy
from zapcli.cli.output import escape_controls, is_tty
from zapcli.errors import UsageError, ZapcliError
from zapcli.paths import control_roots


class TerminalApprover(Policy):
    """Asks y/N on the terminal; denies when there is none (never blocks a script)."""

    def __init__(self, mode: str, workspace: str, cwd: str, roots: tuple[str, ...], unattended: bool):
        unattended = unattended or not (sys.stdin.isatty() and sys.stderr.isatty())
        super().__init__(mode, workspace, cwd, roots, unattended, control_roots())
        self.input_ended = False

    def ask(self, tool: str, verdict: Verdict, args: dict[str, Any]) -> tuple[bool, str]:
        if verdict.action == "allow":
            return True, ""
        if verdict.action == "deny":
            return False, verdict.reason or "denied by policy"
        if self.unattended:
            return False, "no terminal to ask for approval (run with --approval full to allow)"
        from rich.markup import escape
        from rich.prompt import Confirm

        # One question at a time: concurrent `subagent` calls may ask together.
        with _ASKING:
            if tool == "subagents_save":  # a configuration change: show what it saves
                from zapcli.cli.definition_tools import save_preview

                sys.stderr.write(escape_controls(save_preview(args, self.workspace)) + "\n")
            try:
                ok = Confirm.ask(f"[magenta]allow[/] {escape(escape_controls(verdict.summary))}?",
                                 default=False)
            except EOFError:  # the terminal's input ended: nobody can answer any more
                self.unattended = self.input_ended = True
                sys.stderr.write("\n")
                return False, "no answer at the terminal (its input ended); denied"
        return ok, "approved at the terminal" if ok else "denied at the terminal"


_ASKING = threading.Lock()


class _Terminated(Exception):
    """SIGTERM reached `zapcli run`: end like Ctrl-C, naming what still runs."""


def _terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


def _args_text(arguments: Any) -> str:
    """Tool-call arguments as compact JSON (as `replay` shows them), escaped."""
    if isinstance(arguments, str):
        return escape_controls(arguments)
    import json as jsonlib

    return escape_controls(jsonlib.dumps(arguments, ensure_ascii=False, separators=(", ", ": ")))


def _emit_run(run_id: str, status: str, reason: str | None, report: str | None, sub: Any,
              tokens: list[int], **extra: Any) -> None:
    """The one `run --json` document: `tokens` are the run's own model calls;
    `extra` keys (`running`, `error`) when the run did not complete."""
    from zapcli.cli.output import emit_json

    emit_json({"run_id": run_id, "status": status, "reason": reason, "report": report,
               "subagents": list(sub.started),
               "tokens": {"input_tokens": tokens[0], "output_tokens": tokens[1],
                          "cached_tokens": tokens[2]}, **extra})


def _left_running(sub: Any, run_id: str) -> list[str]:
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
        sys.stderr.write(f"zapcli: note: {len(running)} subagent(s) of this run still running "
                         f"({' '.join(running)}); stop them with ZAPCLI_SESSION={run_id} zapcli kill --all\n")
    return running


class _TerminalSink:
    """Where the foreground run's records go: text to stdout, tool activity to
    stderr, tokens to the ledger after each model call (a SIGKILLed run keeps
    what it spent). With --json nothing streams but failed tool results."""

    def __init__(self, run_id: str, json: bool):
        self.run_id, self.json = run_id, json
        self.tokens = [0, 0, 0]
        self.mid_line = False
        self.calls: dict[str, str] = {}  # call_id -> "name {arguments}", to label results
        self.last_call = ""

    def __call__(self, rtype: str, rec: dict[str, Any]) -> None:
        if self.json and rtype in ("text", "tool_call", "tool_result"):
            if not (rtype == "tool_result" and not rec.get("ok")):
                return  # --json: one document at the end, nothing streamed
        handler = getattr(self, f"_{rtype}", None)
        if handler is not None:
            handler(rec)

    def _text(self, rec: dict[str, Any]) -> None:
        delta = escape_controls(str(rec.get("delta", "")))
        sys.stdout.write(delta)
        sys.stdout.flush()
        self.mid_line = bool(delta) and not delta.endswith("\n") or (self.mid_line and not delta)

    def _tool_call(self, rec: dict[str, Any]) -> None:
        if self.mid_line:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.mid_line = False
        call = f"{rec.get('name')} {_args_text(rec.get('arguments'))}"
        self.calls[str(rec.get("call_id"))] = call
        self.last_call = str(rec.get("call_id"))
        sys.stderr.write(f"· {call[:200]}\n")

    def _tool_result(self, rec: dict[str, Any]) -> None:
        call_id = str(rec.get("call_id"))
        if call_id != self.last_call:  # several calls ran at once: say whose result this is
            sys.stderr.write(f"  ↳ {self.calls.get(call_id, '?')[:120]}\n")
        self.last_call = call_id
        lines = escape_controls(str(rec.get("content", ""))).split("\n")
        shown = "\n".join("  │ " + x for x in lines[:40])
        more = f"\n  │ … {len(lines) - 40} more lines" if len(lines) > 40 else ""
        sys.stderr.write(("" if rec.get("ok") else "  ! error:\n") + shown + more + "\n")

    def _usage(self, rec: dict[str, Any]) -> None:
        from zapcli import ledger

        step = [int(rec.get(key) or 0) for key in ("input_tokens", "output_tokens", "cached_tokens")]
        for i, n in enumerate(step):
            self.tokens[i] += n
        try:
            ledger.add_run_usage(self.run_id, ledger.Tokens(*step))
        except ZapcliError as exc:
            sys.stderr.write(f"zapcli: warning: tokens not recorded: {exc.message}\n")

    def _diagnostic(self, rec: dict[str, Any]) -> None:
        sys.stderr.write(f"zapcli: note: {escape_controls(str(rec.get('message')))}\n")


def _checked(task: str | None, approval: str | None, timeout: float | None,
             default_timeout: float) -> tuple[str, float]:
    """The task (stdin for `-`) and the run's time limit, or a UsageError."""
    from zapcli.config import APPROVAL_MODES

    if not task or not task.strip():
        raise UsageError("the task is empty; e.g. zapcli run 'summarise the open TODOs'")
    if approval is not None and approval not in APPROVAL_MODES:
        raise UsageError(f"unknown --approval '{approval}'; choose one of: {', '.join(APPROVAL_MODES)}")
    limit = default_timeout if timeout is None else timeout
    if not 0 < limit <= 7 * 86400:
        raise UsageError(f"--timeout must be more than 0 and at most 604800 seconds, got {limit}")
    if task == "-":  # read up to one byte past the limit, never the whole of /dev/zero
        from zapcli.ops.spawn import MAX_TASK_BYTES, decode_task

        task = decode_task(sys.stdin.buffer.read(MAX_TASK_BYTES + 1))
    return task, limit


def run_foreground(task: str | None, agent: str | None, model: str | None, max_tokens: int | None,
                   approval: str | None, unattended: bool, json: bool, timeout: float | None = None,
                   sandbox: str = "auto") -> int:
    from zapcli import ids
    from zapcli.agent.types import ModelError
    from zapcli.backends.resolve import resolve_agent
    from zapcli.cli.definition_tools import definition_tools
    from zapcli.cli.subagent_tool import SubagentTool
    from zapcli.config import load_settings
    from zapcli.host.agent import build_host
    from zapcli.paths import workspace_of

    cwd = str(Path.cwd())
    workspace = workspace_of(Path(cwd))
    settings = load_settings(workspace)
    task, limit = _checked(task, approval, timeout, settings.timeout_s)
    run_id = "run_" + ids.new_id()[3:]
    os.environ["ZAPCLI_SESSION"] = run_id
    fields, _warnings = resolve_agent(agent, model, workspace, settings)
    gate = TerminalApprover(approval or settings.approval, str(workspace), cwd,
                            settings.writable_roots, unattended)
    sub = SubagentTool(approval=gate.mode, unattended=gate.unattended,
                       shell_allowed="bash" in (fields["grant"] or {}).get("tools", []))
    if not gate.unattended:  # its children's questions come here while this process lives
        sub.env.relay = _relay()
    sub.env.sandbox = sandbox
    deadline = time.monotonic() + limit
    box, scratch, notes = _sandbox(sandbox, run_id, gate, fields)
    try:
        host = build_host(fields, workspace=str(workspace), cwd=cwd,
                          writable_roots=settings.writable_roots, providers=settings.providers,
                          approver=gate, extra_tools=(sub, *definition_tools()),
                          deadline_mono=deadline, sandbox=box)
    except ModelError as exc:
        _drop(scratch)
        raise ZapcliError(exc.reason) from None
    sink = _TerminalSink(run_id, json)
    budget = _budget(run_id, max_tokens, sink, sub, settings)
    sys.stderr.write(f"[run {run_id}: subagents it starts belong to session {run_id}; "
                     f"see them with ZAPCLI_SESSION={run_id} zapcli list]\n")
    for diag in [*notes, *host.diagnostics]:
        sink("diagnostic", diag)
    try:
        result = _run_in_foreground(host, task, sink, gate, sub, budget, deadline, limit, json)
    finally:
        host.close()
        _drop(scratch)
    return _finish(result, run_id, sink, sub, json)


def _sandbox(choice: str, run_id: str, gate: TerminalApprover,
             fields: dict[str, Any]) -> tuple[Any, Path, list[dict[str, str]]]:
    """(the sandbox of this run's commands or None, its scratch folder, the
    diagnostics that say what it left out or why there is none). Raises
    ZapcliError when --sandbox asked for one this machine cannot give."""
    from zapcli import children
    from zapcli.definitions.model import SandboxSpec
    from zapcli.host.sandbox import open_sandbox, prepare
    from zapcli.paths import state_dir

    scratch = state_dir() / "runs" / f"{run_id}.tmp"
    prepared = prepare(choice, mode=gate.mode, workspace=gate.workspace,
                       writable_roots=gate.writable_roots,
                       spec=SandboxSpec.from_dict((fields.get("definition") or {}).get("sandbox")),
                       scratch=scratch)
    if prepared.refused:
        raise ZapcliError(prepared.refused + "; nothing was run")
    box = open_sandbox(prepared, on_start=lambda pid: children.started(pid, "sandbox"))
    return box, scratch, prepared.diagnostics


def _drop(scratch: Path) -> None:
    import shutil

    shutil.rmtree(scratch, ignore_errors=True)


def _relay() -> dict[str, Any]:
    """This process's identity, recorded in each child's spawn record: the
    child's gate denies a pending request once this run is gone."""
    import socket

    from zapcli.supervisor.launch import process_create_time

    return {"pid": os.getpid(), "create_time": process_create_time(os.getpid()),
            "host": socket.gethostname()}


def _budget(run_id: str, max_tokens: int | None, sink: _TerminalSink, sub: Any,
            settings: Any) -> Any:
    """`--max-tokens` on `run` is a budget for the whole tree (SPEC §16)."""
    if max_tokens is None:
        return None
    if max_tokens <= 0:
        raise UsageError(f"--max-tokens must be a positive number of tokens, got {max_tokens}")
    from zapcli import ledger
    from zapcli.ops.budget import TreeBudget

    budget = TreeBudget(run_id, max_tokens, own=lambda: sink.tokens[0] + sink.tokens[1],
                        children=lambda: list(sub.started), settings=settings)
    sub.budget = budget
    try:
        ledger.set_budget(run_id, max_tokens)
    except ZapcliError as exc:
        sys.stderr.write(f"zapcli: warning: budget not recorded for `usage`: {exc.message}\n")
    return budget


def _run_in_foreground(host: Any, task: str, sink: _TerminalSink, gate: TerminalApprover,
                       sub: Any, budget: Any, deadline: float, limit: float,
                       json: bool) -> Any:
    """The loop runs on a thread so the deadline and Ctrl-C hold even while a
    model call blocks; a blocked call is abandoned (the thread is a daemon).
    A tree budget is enforced on its own thread too: subagents spend while
    the model waits for them."""
    from zapcli.agent.types import Hooks
    from zapcli.cli.watch import ApprovalWatcher

    box: list[Any] = []
    notices = sub.announcements if budget is None else lambda: sub.announcements() + budget.notices()
    hooks = Hooks(approver=gate, before_model_call=notices)
    # subagents' approval requests are asked here, at once, whatever the model is doing
    watcher = ApprovalWatcher(lambda: sub.started, sub.notify, gate, _ASKING)

    def stop_reason() -> tuple[str, str] | None:
        if time.monotonic() >= deadline:
            return ("timeout", f"--timeout {limit:g}s reached")
        used = None if budget is None else budget.enforce()  # every child's trail read once
        if used is not None:
            return budget.should_stop(used)  # type: ignore[no-any-return]
        return None

    def loop() -> None:
        box.append(host.run(task, sink, hooks=hooks, should_stop=stop_reason))

    worker = threading.Thread(target=loop, name="agent-loop", daemon=True)
    previous = signal.signal(signal.SIGTERM, _terminated)
    run_id = sink.run_id
    watching = threading.Event()
    if budget is not None:
        budget.watch(watching)
    try:
        watcher.start()
        worker.start()
        worker.join(timeout=max(limit, 0) + 1.0)
    except (KeyboardInterrupt, _Terminated) as exc:
        _interrupted(exc, run_id, sub, sink, json)
    finally:
        watching.set()
        watcher.stop.set()
        signal.signal(signal.SIGTERM, previous)
    if not box:
        _left_running(sub, run_id)
        why = (f"timed out after {limit:g}s (waiting for the model); raise --timeout or check "
               "the endpoint with `zapcli doctor`")
        if json:  # --json promises the run document, also when the run does not complete
            _emit_run(run_id, "timeout", why, None, sub, sink.tokens)
            raise SystemExit(1)
        raise ZapcliError(f"run {run_id} {why}")
    return box[0]


def _interrupted(exc: BaseException, run_id: str, sub: Any, sink: _TerminalSink,
                 json: bool) -> None:
    """Ctrl-C or SIGTERM: name what still runs; with --json the run document
    (one document, also when the run does not complete) and the exit code."""
    running = _left_running(sub, run_id)
    if isinstance(exc, _Terminated):
        sys.stderr.write(f"zapcli: run {run_id} was terminated (SIGTERM)\n")
        if json:
            _emit_run(run_id, "cancelled", "terminated (SIGTERM)", None, sub, sink.tokens,
                      running=running)
        raise SystemExit(128 + signal.SIGTERM) from None
    if not json:
        raise exc
    sys.stderr.write("zapcli: interrupted\n")
    why = "interrupted (Ctrl-C); subagents keep running"
    _emit_run(run_id, "interrupted", why, None, sub, sink.tokens, running=running,
              error={"code": "interrupted", "message": why, "exit_code": 130})
    raise SystemExit(130) from None


def _finish(result: Any, run_id: str, sink: _TerminalSink, sub: Any, json: bool) -> int:
    _left_running(sub, run_id)
    if json:
        _emit_run(run_id, result.status, result.reason, result.report, sub, sink.tokens)
        return 0 if result.status == "completed" else 1
    sys.stdout.write("\n")
    if result.status != "completed":
        raise ZapcliError(f"run {run_id} ended {result.status}: {result.reason}")
    if is_tty(sys.stderr):
        sys.stderr.write(f"[run {run_id}: {sink.tokens[0]} in / {sink.tokens[1]} out tokens; "
                         f"`ZAPCLI_SESSION={run_id} zapcli usage` for details]\n")
    return 0
