"""`zapcli run TASK`: the built-in agent in the foreground, with the subagent tool.

Imports `zapcli.agent`, `zapcli.providers`, `zapcli.tools`, `zapcli.capabilities`
lazily (only this command pays for them). Text streams to stdout, tool
activity to stderr. Everything it starts belongs to its own run id
(ZAPCLI_SESSION), whose ledger collects its own tokens and its subagents'.
Approvals ask on a terminal (`zapcli.cli.approver`); without one they are
denied with a reason. The subagents' approval requests are asked there too,
at once (`zapcli.cli.watch`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from zapcli.cli.approver import _ASKING, TerminalApprover
from zapcli.cli.definition_tools import SHOWN
from zapcli.cli.output import escape_controls, is_tty
from zapcli.cli.runend import (
    Halt,
    HungUp,
    Terminated,
    close,
    doing,
    emit_run,
    halt,
    interrupted,
    not_started,
    say,
)
from zapcli.errors import UsageError, ZapcliError
from zapcli.trail.model import Status


def _call_text(rec: dict[str, Any]) -> str:
    """A tool call in one line: its name (as the model sent it: escaped too)
    and arguments."""
    return f"{escape_controls(str(rec.get('name')))} {_args_text(rec.get('arguments'))}"


def _say(text: str) -> None:
    """A line of the run's tool activity on stderr, every control character
    escaped, whatever the caller did: what it shows came from the model."""
    sys.stderr.write(escape_controls(text))


def _args_text(arguments: Any) -> str:
    """Tool-call arguments as compact JSON (as `replay` shows them), escaped."""
    if isinstance(arguments, str):
        return escape_controls(arguments)
    import json as jsonlib

    return escape_controls(jsonlib.dumps(arguments, ensure_ascii=False, separators=(", ", ": ")))


class _OpenLine:
    """The run's stderr while it runs: whatever writes there — a note of the
    sink, the approval watcher, the run's end — starts on a line of its own
    when the model's streamed text left stdout's line open (both are the
    terminal). The one place that ends that line; everything else passes
    through to the stream it wraps."""

    def __init__(self, stream: Any, sink: _TerminalSink):
        self._stream, self._sink = stream, sink

    def write(self, text: str) -> int:
        if text:
            from zapcli.cli.output import settling

            settling()  # a question decided elsewhere ends its own line first
            self.end()
        return int(self._stream.write(text))

    def end(self) -> None:
        """End stdout's line if the model's text left it open."""
        if self._sink.mid_line:
            self._sink.mid_line = False
            try:
                sys.stdout.write("\n")
                sys.stdout.flush()
            except (OSError, ValueError):
                pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _TerminalSink:
    """Where the foreground run's records go: text to stdout, tool activity to
    stderr, tokens to the ledger after each model call (a SIGKILLed run keeps
    what it spent). With --json nothing streams but failed tool results."""

    def __init__(self, run_id: str, json: bool):
        self.run_id, self.json = run_id, json
        self.trail: Any = None  # the run's own trail (zapcli.cli.runtrail)
        self.tokens = [0, 0, 0]
        self.own: Any = None  # ledger.Tokens of its own calls
        self.mid_line = False
        self.calls: dict[str, str] = {}  # call_id -> "name {arguments}", to label results
        self.last_call = ""
        self.batch = 0  # calls made together (before their results): more than one, each result is labelled
        self.answering = False  # results are being shown; the next call starts a new batch
        self.on_notice: Any = None  # the announcements were sent to the model (SubagentTool.delivered)
        self.running: dict[str, str] = {}  # call_id -> its tool's name, until its result

    def __call__(self, rtype: str, rec: dict[str, Any]) -> None:
        if self.trail is not None:
            self.trail.append(rtype, rec)
        if rtype == "tool_call":
            self.running[str(rec.get("call_id"))] = str(rec.get("name") or "?")
        elif rtype == "tool_result":
            self.running.pop(str(rec.get("call_id")), None)
        if self.json and rtype in ("text", "tool_call", "tool_result"):
            if rtype == "tool_call":  # not said, but a failed result names it
                self.calls[str(rec.get("call_id"))] = _call_text(rec)
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
        call = self.calls[str(rec.get("call_id"))] = _call_text(rec)
        self.batch = 1 if self.answering else self.batch + 1
        self.answering = False
        self.last_call = str(rec.get("call_id"))
        _say(f"· {call[:200]}\n")

    def _tool_result(self, rec: dict[str, Any]) -> None:
        call_id = str(rec.get("call_id"))
        self.answering = True
        if call_id != self.last_call or self.batch > 1:  # several calls ran at once: say whose result this is
            _say(f"  ↳ {self.calls.get(call_id, '?')[:120]}\n")
        self.last_call = call_id
        compact = SHOWN.get(self.calls.get(call_id, "").split(" ", 1)[0]) if rec.get("ok") else None
        content = str(rec.get("content", ""))
        lines = [escape_controls(x) for x in (compact and compact(content)
                                               or content.split("\n"))]
        shown = "\n".join("  │ " + x for x in lines[:40])
        more = f"\n  │ … {len(lines) - 40} more lines" if len(lines) > 40 else ""
        _say(("" if rec.get("ok") else "  ! error:\n") + shown + more + "\n")

    def _usage(self, rec: dict[str, Any]) -> None:
        from zapcli import ledger

        step = [int(rec.get(key) or 0) for key in ("input_tokens", "output_tokens", "cached_tokens")]
        for i, n in enumerate(step):
            self.tokens[i] += n
        cost = rec.get("cost_usd") if isinstance(rec.get("cost_usd"), (int, float)) else None
        call = ledger.Tokens(step[0], step[1], step[2], cost, int(rec.get("cache_write_tokens") or 0), 1)
        self.own = call if self.own is None else self.own + call
        try:
            ledger.add_run_usage(self.run_id, call)
        except ZapcliError as exc:
            _say(f"zapcli: warning: tokens not recorded: {exc.message}\n")

    def _rate_limit(self, rec: dict[str, Any]) -> None:
        _say(f"zapcli: note: rate-limited ({rec.get('message')}); "
             f"retrying in {float(rec.get('retry_in_s') or 0):.0f}s\n")

    def _notice(self, rec: dict[str, Any]) -> None:
        """What the run told its model before a call: its subagents' ends (a
        late result too), approvals decided, the budget's notice."""
        if rec.get("source") != "announcements":
            return
        if self.on_notice is not None:
            self.on_notice()
        for line in str(rec.get("text", "")).split("\n"):
            _say(f"⇠ {escape_controls(line)[:300]}\n")

    def _diagnostic(self, rec: dict[str, Any]) -> None:
        _say(f"zapcli: note: {rec.get('message')}\n")


def _checked(task: str | None, approval: str | None, timeout: float | None,
             settings: Any, workspace: Path) -> tuple[str, float]:
    """The task (stdin for `-`) and the run's time limit, or a UsageError
    (also for a workspace that is, or contains, the person's home folder)."""
    from zapcli.approvals import home_refusal
    from zapcli.config import APPROVAL_MODES

    if not task or not task.strip():
        raise UsageError("the task is empty; e.g. zapcli run 'summarise the open TODOs'")
    if approval is not None and approval not in APPROVAL_MODES:
        raise UsageError(f"unknown --approval '{approval}'; choose one of: {', '.join(APPROVAL_MODES)}")
    why = home_refusal(approval or settings.approval, str(workspace), settings.writable_roots)
    if why:
        raise UsageError(f"{why}. Nothing was run")
    limit = settings.timeout_s if timeout is None else timeout
    if not 0 < limit <= 7 * 86400:
        raise UsageError(f"--timeout must be more than 0 and at most 604800 seconds, got {limit}")
    if task == "-":  # read up to one byte past the limit, never the whole of /dev/zero
        from zapcli.cli.output import text_from_stdin

        task = text_from_stdin()
    return task, limit


def _hold_trust(workspace: Path, wanted: bool) -> None:
    """The run's trust decision, made once as it starts (after `--trust`)
    and held for its whole life: what its agent plants or changes in the
    workspace reaches none of the subagents it spawns. One line says what
    was ignored."""
    from zapcli import trust
    from zapcli.ops.trust import first as trust_first

    trust_first(workspace, wanted)
    verdict = trust.decide(workspace)
    trust.inherit(verdict.frozen())
    notice = verdict.notice()
    if notice:
        from zapcli.cli.output import warn

        warn(notice)


def run_foreground(task: str | None, agent: str | None, model: str | None, max_tokens: int | None,
                   approval: str | None, unattended: bool, json: bool, timeout: float | None = None,
                   max_cost: float | None = None, max_subagents: int | None = None,
                   sandbox: str = "auto", trust: bool = False) -> int:
    from zapcli import agentroots, ids
    from zapcli.backends.agent import resolve_agent
    from zapcli.backends.sections import OWNERS
    from zapcli.cli import runenv
    from zapcli.cli.subagent_tool import SubagentTool
    from zapcli.config import load_settings
    from zapcli.paths import workspace_of

    workspace = workspace_of(Path(cwd := str(Path.cwd())))
    _hold_trust(workspace, trust)
    settings = load_settings(workspace, owners=OWNERS)
    task, limit = _checked(task, approval, timeout, settings, workspace)
    run_id = "run_" + ids.new_id()[3:]
    os.environ["ZAPCLI_SESSION"] = run_id
    fields, _warnings = resolve_agent(agent, model, workspace, settings)
    gate = TerminalApprover(approval or settings.approval, str(workspace), cwd,
                            settings.writable_roots, unattended)
    agentroots.note(str(workspace), settings.writable_roots)  # before its tools write
    sub = SubagentTool(approval=gate.mode, unattended=gate.unattended,
                       shell_allowed="bash" in (fields["grant"] or {}).get("tools", []))
    sub.env.relay = None if gate.unattended else runenv.relay()  # children's questions come here
    sub.env.sandbox, sub.env.default_model = sandbox, model  # children's default model: the run's
    sub.env.shell_env = tuple((fields.get("definition") or {}).get("env") or ())
    # what it holds bounds what it starts (and is what a fork keeps)
    gate.bound = sub.env.spawner = {
        **fields, "cli": "zapcli", "approval": gate.mode, "workspace": str(workspace),
        "writable_roots": list(settings.writable_roots), "sandbox": sandbox}
    sub.env.ask_widening = gate.ask_widening
    gate.keep_denials(run_id, sub.denied)
    sink = _TerminalSink(run_id, json)
    stderr = sys.stderr
    sys.stderr = keeper = _OpenLine(stderr, sink)  # type: ignore[assignment]
    try:
        return _run(task, fields, cwd, workspace, settings, gate, sub, sink, limit, max_tokens,
                    max_cost, max_subagents, sandbox, json)
    except BaseException:
        keeper.end()  # what is said of it (`zapcli: error: …`) starts on a line of its own
        raise
    finally:
        sys.stderr = stderr


def _run(task: str, fields: dict[str, Any], cwd: str, workspace: Path, settings: Any,
         gate: TerminalApprover, sub: Any, sink: _TerminalSink, limit: float,
         max_tokens: int | None, max_cost: float | None, max_subagents: int | None,
         sandbox: str, json: bool) -> int:
    from zapcli.agent.types import ModelError
    from zapcli.cli import runenv, runtrail, runtree
    from zapcli.cli.definition_tools import definition_tools
    from zapcli.host.agent import build_host
    from zapcli.team.agent_tools import for_run

    run_id = sink.run_id
    runtree.check_for(fields, settings, max_tokens, max_cost, max_subagents)
    sink.trail = trail = runtrail.open_run(run_id, task, fields, cwd=cwd, workspace=str(workspace),
                                           approval=gate.mode, timeout_s=limit)
    deadline = time.monotonic() + limit
    try:
        box, scratch, notes = runenv.sandbox(sandbox, run_id, gate, fields, settings.scratch_size)
    except ZapcliError as exc:
        trail.end("failed", exc.message)
        not_started(exc, run_id, sub, json)
        raise
    try:
        host = build_host(fields, workspace=str(workspace), cwd=cwd,
                          writable_roots=settings.writable_roots, providers=settings.providers,
                          approver=gate, extra_tools=(sub, *definition_tools(), *for_run(run_id, fields["grant"])),
                          deadline_mono=deadline, sandbox=box)
    except ModelError as exc:
        trail.end("failed", exc.reason)
        runenv.drop(scratch)
        not_started(ZapcliError(exc.reason), run_id, sub, json)
        raise ZapcliError(exc.reason) from None
    from zapcli.cli.runtree import RunTree

    try:
        tree = RunTree(run_id, settings, model=getattr(host.client, "model", None),
                       max_tokens=max_tokens, max_cost=max_cost, max_subagents=max_subagents,
                       deadline=deadline)
    except ZapcliError as exc:
        host.close()
        runenv.drop(scratch)
        trail.end("failed", exc.message)
        raise
    sub.env.parent, sub.env.run = run_id, tree.identity()
    sys.stderr.write(f"[run {run_id}: subagents it starts belong to session {run_id}; "
                     f"see them with ZAPCLI_SESSION={run_id} zapcli list]\n")
    for diag in [*notes, *host.diagnostics]:
        sink("diagnostic", diag)
    try:
        result = _run_in_foreground(host, task, sink, gate, sub, tree, deadline, limit, json)
    except BaseException as exc:
        trail.end(*runtrail.status_of(exc))
        raise
    finally:
        host.close()
        runenv.drop(scratch)
    trail.end(result.status, result.reason)
    return _finish(result, run_id, sink, sub, tree, json)


def _run_in_foreground(host: Any, task: str, sink: _TerminalSink, gate: TerminalApprover,
                       sub: Any, tree: Any, deadline: float, limit: float,
                       json: bool) -> Any:
    """The loop runs on a thread so the deadline and Ctrl-C hold even while a
    model call blocks; a blocked call is abandoned (the thread is a daemon).
    A tree budget is enforced on its own thread too: subagents spend while
    the model waits for them."""
    from zapcli.agent.types import Hooks
    from zapcli.cli.watch import ApprovalWatcher
    from zapcli.ops import fork

    box: list[Any] = []
    budget = tree.budget
    notices = sub.announcements if budget is None else lambda: sub.announcements() + budget.notices()
    said = fork.Conversation(getattr(host.client, "model", None))  # what a fork starts from
    sub.env.conversation = said.snapshot
    # results land back: an answer while its subagents work waits for the next result
    hooks = Hooks(approver=gate, before_model_call=notices, on_calls=said.update,
                  await_results=sub.await_results)
    sink.on_notice = sub.delivered
    sub.waiting = lambda ids: sink("diagnostic", {
        "dimension": "run", "name": "waiting", "message":
        f"waiting for {len(ids)} subagent result(s) ({' '.join(ids)}): each goes to the model "
        "as it arrives (Ctrl-C stops them)"})
    # subagents' approval requests are asked here, at once, whatever the model is doing
    watcher = ApprovalWatcher(lambda: sub.started, sub.notify, gate, _ASKING,
                              denied=sub.denied if gate.unattended else None)
    halted = Halt()  # Ctrl-C, SIGTERM, SIGHUP: seen from the moment one is sent
    gate.stopped = sub.stopped = halted

    def stop_reason() -> tuple[str, str] | None:
        if halted.confirmed():
            return ("cancelled", "interrupted")
        if time.monotonic() >= deadline:
            return ("timeout", f"--timeout {limit:g}s reached")
        if budget is not None and budget.enforce() is not None:
            return budget.stop_reason()  # type: ignore[no-any-return]
        return None

    def loop() -> None:
        box.append(host.run(task, tree.meter.sink(sink), hooks=hooks, should_stop=stop_reason,
                            budget=tree.check))

    worker = threading.Thread(target=halted.poking(loop), name="agent-loop", daemon=True)
    previous = halted.catch()
    run_id = sink.run_id
    watching = threading.Event()
    if budget is not None:
        budget.watch(watching)
    try:
        watcher.start()
        worker.start()
        halted.wait(worker, max(limit, 0) + 1.0)  # answering `confirmed` meanwhile
        if halted.is_set() and halted.claim():  # its loop saw the signal before the handler ran
            raise halted.exception()
    except (KeyboardInterrupt, Terminated, HungUp) as exc:
        halt(halted, watcher, gate, sub)
        watching.set()
        interrupted(exc, run_id, sub, tree, json)
    finally:
        watching.set()
        watcher.stop.set()
        watcher.catch_up()  # a denial made since its last look is in the report too
        halted.release(previous)
    if not box:
        was, running = doing(sink)  # before closing answers its wait
        closed = close(tree, sub, run_id)
        why = (f"timed out after {limit:g}s {was}; raise --timeout"
               + ("" if running else " or check the endpoint with `zapcli doctor`"))
        if json:  # --json promises the run document, also when the run does not complete
            emit_run(run_id, "timeout", why, None, sub, tree.own(), closed)
            raise SystemExit(1)
        raise ZapcliError(f"run {run_id} {why}")
    return box[0]


def _about(reason: str) -> str:
    """The size the stop foresaw for the next call (" (about 4,999)"), kept when
    the reason is said anew for the tree: how much budget the call needed."""
    import re

    found = re.search(r" \(about [^()]*\)", reason)
    return found.group(0) if found else ""


def _finish(result: Any, run_id: str, sink: _TerminalSink, sub: Any, tree: Any, json: bool) -> int:
    closed = close(tree, sub, run_id)
    own = [d for d in sub.denied if d["id"] == run_id]
    kids = [d for d in sub.denied if d["id"] != run_id]
    if kids and not json:  # each was said as it happened; the end says it once more
        ids = " ".join(dict.fromkeys(d["id"] for d in kids))
        say(f"zapcli: note: {len(kids)} approval request(s) of this run's subagents "
            f"denied without asking ({ids}): at a terminal you are asked; --approval full "
            "allows them\n")
    if own and not json:
        tools = ", ".join(dict.fromkeys(str(d["tool"]) for d in own))
        say(f"zapcli: note: {len(own)} of this run's own tool calls ({tools}) needed a person's "
            "approval and were denied without asking: at a terminal you are asked; "
            "--approval full allows them\n")
    reason = result.reason
    if reason and reason.startswith(("token budget", "cost budget")) and tree.budget is not None:
        figures = closed[1]  # the tree has ended: its figures are final, as usage shows them
        kind = tree.budget.name(figures.total, figures.cost)  # dollars: "cost budget"
        reason = (f"{kind} exceeded ({tree.budget.said(figures.total, figures.cost)}, "
                  "this run and its subagents)") if tree.budget.share(figures.total, figures.cost) >= 1 \
            else (f"{kind}: {tree.budget.said(figures.total, figures.cost)} used by this run "
                  f"and its subagents, and its next model call{_about(reason)} would not fit")
    if json:
        emit_run(run_id, result.status, reason, result.report, sub, tree.own(), closed)
        return 0 if Status.parse(result.status) == Status.COMPLETED else 1
    sys.stdout.write("\n")
    sink.mid_line = False
    if Status.parse(result.status) != Status.COMPLETED:
        raise ZapcliError(f"run {run_id} ended {result.status}: {reason}")
    if is_tty(sys.stderr):
        sys.stderr.write(f"[run {run_id}: {sink.tokens[0]:,} in / {sink.tokens[1]:,} out tokens; "
                         f"`ZAPCLI_SESSION={run_id} zapcli usage` for details]\n")
    return 0
