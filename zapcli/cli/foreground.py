"""`zapcli run TASK`: the built-in agent in the foreground, with the subagent tool.

Imports `zapcli.agent`, `zapcli.providers`, `zapcli.tools`, `zapcli.capabilities`
lazily (only this command pays for them). Text streams to stdout, tool
activity to stderr. Everything it starts belongs to its own run id
(ZAPCLI_SESSION), whose ledger collects its own tokens and its subagents'.
Approvals ask on a terminal; without one they are denied with a reason.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from zapcli.approvals import Policy
from zapcli.cli.output import escape_controls, is_tty
from zapcli.errors import UsageError, ZapcliError
from zapcli.paths import control_roots


class TerminalApprover(Policy):
    """Asks y/N on the terminal; denies when there is none (never blocks a script)."""

    def __init__(self, mode: str, workspace: str, cwd: str, roots: tuple[str, ...], unattended: bool):
        unattended = unattended or not (sys.stdin.isatty() and sys.stderr.isatty())
        super().__init__(mode, workspace, cwd, roots, unattended, control_roots())

    def request(self, tool: str, summary: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        decision = self.decision_for(tool, arguments)
        if decision is not None and decision.action == "allow":
            return True, ""
        if decision is not None and decision.action == "deny":
            return False, decision.reason or "denied by policy"
        if self.unattended:
            return False, "no terminal to ask for approval (run with --approval full to allow)"
        from rich.markup import escape
        from rich.prompt import Confirm

        # One question at a time: concurrent `subagent` calls may ask together.
        with _ASKING:
            try:
                ok = Confirm.ask(f"[magenta]allow[/] {escape(escape_controls(summary))}?",
                                 default=False)
            except EOFError:  # the terminal's input ended: nobody can answer any more
                self.unattended = True
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
              tokens: list[int]) -> None:
    """The one `run --json` document: `tokens` are the run's own model calls."""
    from zapcli.cli.output import emit_json

    emit_json({"run_id": run_id, "status": status, "reason": reason, "report": report,
               "subagents": list(sub.started),
               "tokens": {"input_tokens": tokens[0], "output_tokens": tokens[1],
                          "cached_tokens": tokens[2]}})


def _left_running(sub: Any, run_id: str) -> None:
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


def run_foreground(task: str | None, agent: str | None, model: str | None, max_tokens: int | None,
                   approval: str | None, unattended: bool, json: bool, timeout: float | None = None) -> int:
    from zapcli import ids, ledger
    from zapcli.config import APPROVAL_MODES, load_settings
    from zapcli.paths import workspace_of

    if not task or not task.strip():
        raise UsageError("the task is empty; e.g. zapcli run 'summarise the open TODOs'")
    if approval is not None and approval not in APPROVAL_MODES:
        raise UsageError(f"unknown --approval '{approval}'; choose one of: {', '.join(APPROVAL_MODES)}")
    if task == "-":
        task = sys.stdin.read()
    run_id = "run_" + ids.new_id()[3:]
    os.environ["ZAPCLI_SESSION"] = run_id
    cwd = str(Path.cwd())
    workspace = workspace_of(Path(cwd))
    settings = load_settings(workspace)
    from zapcli.agent.loop import run_loop
    from zapcli.agent.types import ModelError, ToolContext
    from zapcli.backends.resolve import resolve_agent, search_provider
    from zapcli.capabilities.grant import Grant, open_tools
    from zapcli.capabilities.prompt import assemble_prompt
    from zapcli.cli.subagent_tool import SubagentTool
    from zapcli.definitions import Definition
    from zapcli.providers.resolve import build_client
    from zapcli.tools.env import scrubbed_env
    from zapcli.tools.registry import Toolset

    fields, _warnings = resolve_agent(agent, model, workspace, settings)
    try:
        client = build_client(fields["model"], None, settings.providers, os.environ)
    except ModelError as exc:
        raise ZapcliError(exc.reason) from None
    definition = Definition.from_dict(fields["definition"])
    grant = Grant.from_dict(fields["grant"])
    gate = TerminalApprover(approval or settings.approval, str(workspace), cwd,
                            settings.writable_roots, unattended)
    toolset = Toolset(grant.tools, search_provider=search_provider())
    caps = open_tools(grant, approver=gate)
    sub = SubagentTool(approval=gate.mode, unattended=gate.unattended, shell_allowed="bash" in grant.tools)
    tokens = [0, 0, 0]
    err = sys.stderr

    mid_line = [False]
    calls: dict[str, str] = {}  # call_id -> "name {arguments}", to label results
    last_call = [""]

    err.write(f"[run {run_id}: subagents it starts belong to session {run_id}; "
              f"see them with ZAPCLI_SESSION={run_id} zapcli list]\n")

    def sink(rtype: str, rec: dict[str, Any]) -> None:
        if json and rtype in ("text", "tool_call", "tool_result"):
            if rtype == "tool_result" and not rec.get("ok"):
                pass
            else:
                return  # --json: one document at the end, nothing streamed
        if rtype == "text":
            delta = escape_controls(str(rec.get("delta", "")))
            sys.stdout.write(delta)
            sys.stdout.flush()
            mid_line[0] = bool(delta) and not delta.endswith("\n") or (mid_line[0] and not delta)
        elif rtype == "tool_call":
            if mid_line[0]:
                sys.stdout.write("\n")
                sys.stdout.flush()
                mid_line[0] = False
            call = f"{rec.get('name')} {_args_text(rec.get('arguments'))}"
            calls[str(rec.get("call_id"))] = call
            last_call[0] = str(rec.get("call_id"))
            err.write(f"· {call[:200]}\n")
        elif rtype == "tool_result":
            call_id = str(rec.get("call_id"))
            if call_id != last_call[0]:  # several calls ran at once: say whose result this is
                err.write(f"  ↳ {calls.get(call_id, '?')[:120]}\n")
            last_call[0] = call_id
            lines = escape_controls(str(rec.get("content", ""))).split("\n")
            shown = "\n".join("  │ " + x for x in lines[:40])
            more = f"\n  │ … {len(lines) - 40} more lines" if len(lines) > 40 else ""
            err.write(("" if rec.get("ok") else "  ! error:\n") + shown + more + "\n")
        elif rtype == "usage":
            step = [int(rec.get(key) or 0) for key in ("input_tokens", "output_tokens", "cached_tokens")]
            for i, n in enumerate(step):
                tokens[i] += n
            try:  # recorded per model call: a SIGKILLed run keeps what it spent
                ledger.add_run_usage(run_id, ledger.Tokens(*step))
            except ZapcliError as exc:
                err.write(f"zapcli: warning: tokens not recorded: {exc.message}\n")
        elif rtype == "diagnostic":
            err.write(f"zapcli: note: {escape_controls(str(rec.get('message')))}\n")

    for diag in [*fields.get("diagnostics", []), *caps.diagnostics]:
        sink("diagnostic", diag)
    ctx = ToolContext(workspace=str(workspace), cwd=cwd, env=scrubbed_env(os.environ, definition.env),
                      writable_roots=settings.writable_roots)
    limit = settings.timeout_s if timeout is None else timeout
    if not 0 < limit <= 7 * 86400:
        raise UsageError(f"--timeout must be more than 0 and at most 604800 seconds, got {limit}")
    deadline = time.monotonic() + limit
    box: list[Any] = []

    def loop() -> None:
        box.append(run_loop(
            system_prompt=assemble_prompt(definition, grant), task=task, client=client,
            tools=[*toolset.tools, *caps.tools, sub], sink=sink, ctx=ctx,
            max_turns=definition.max_turns, max_tokens=max_tokens, approver=gate,
            needs_approval=gate.needs_approval, before_model_call=sub.announcements,
            should_stop=lambda: ("timeout", f"--timeout {limit:g}s reached")
            if time.monotonic() >= deadline else None))

    # The loop runs on a thread so the deadline and Ctrl-C hold even while a
    # model call blocks; a blocked call is abandoned (the thread is a daemon).
    worker = threading.Thread(target=loop, name="agent-loop", daemon=True)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        worker.start()
        worker.join(timeout=max(limit, 0) + 1.0)
    except (KeyboardInterrupt, _Terminated) as exc:
        _left_running(sub, run_id)
        if isinstance(exc, _Terminated):
            err.write(f"zapcli: run {run_id} was terminated (SIGTERM)\n")
            if json:  # --json promises one document, also when the run does not complete
                _emit_run(run_id, "cancelled", "terminated (SIGTERM)", None, sub, tokens)
            raise SystemExit(128 + signal.SIGTERM) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        toolset.close()
        caps.close()
    if not box:
        _left_running(sub, run_id)
        raise ZapcliError(f"run {run_id} timed out after {limit:g}s (waiting for the model); "
                          "raise --timeout or check the endpoint with `zapcli doctor`")
    result = box[0]
    _left_running(sub, run_id)
    if json:
        _emit_run(run_id, result.status, result.reason, result.report, sub, tokens)
        return 0 if result.status == "completed" else 1
    sys.stdout.write("\n")
    if result.status != "completed":
        raise ZapcliError(f"run {run_id} ended {result.status}: {result.reason}")
    if is_tty(err):
        err.write(f"[run {run_id}: {tokens[0]} in / {tokens[1]} out tokens; `ZAPCLI_SESSION={run_id} zapcli usage` for details]\n")
    return 0
