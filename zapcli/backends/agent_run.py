"""The `zapcli` backend, runner side: the built-in agent writing to its trail.

Imports `zapcli.host` (lazily), `zapcli.backends.gate`, `zapcli.trail`.
Builds the agent from the frozen `spawn` record (never from the YAML layers)
through the one agent host, runs it with the trail as its sink, streams
visible text to stdout, writes the `report` synchronously, and reports
steering messages that were never delivered.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from zapcli.backends.base import Backend, RunContext
from zapcli.backends.gate import Gate
from zapcli.supervisor.capture import CappedFile
from zapcli.trail import reader, store
from zapcli.trail.model import SIGTERM_REASON, Outcome, SpawnRecord, Status
from zapcli.trail.writer import TrailWriter


class SteerInbox:
    """`steer` records written by `zapcli send`, delivered once each."""

    def __init__(self, sid: str):
        self.path = store.path_for(sid)
        self.delivered: set[str] = set()

    def pending(self) -> list[tuple[str, str]]:
        out = []
        for rec in reader.read(self.path).records:
            if rec.get("type") == "steer" and not rec.get("delivered"):
                key = str(rec.get("steer_id") or rec.get("seq"))
                if key not in self.delivered:
                    out.append((key, str(rec.get("text", ""))))
        return out

    def take(self) -> list[tuple[str, str]]:
        """(steer_id, text) of each message not delivered yet, marking them delivered."""
        taken = self.pending()
        self.delivered.update(key for key, _ in taken)
        return taken


class AgentBackend(Backend):
    """`--cli zapcli`: the built-in agent, in the runner's own interpreter."""

    name = "zapcli"
    in_process = True

    def run(self, ctx: RunContext) -> Outcome:
        return run(ctx.sid, ctx.spawn, ctx.task, writer=ctx.writer, out=ctx.out,
                   deadline_mono=ctx.deadline_mono, terminated=ctx.terminated)


def run(sid: str, spawn: SpawnRecord, task: str, *, writer: TrailWriter, out: CappedFile,
        deadline_mono: float, terminated: threading.Event) -> Outcome:
    from zapcli.agent.types import Hooks, ModelError
    from zapcli.config import load_settings
    from zapcli.errors import ConfigError
    from zapcli.host.agent import build_host

    gate = Gate(sid, writer, mode=spawn.approval, workspace=spawn.workspace, cwd=spawn.cwd,
                writable_roots=spawn.writable_roots, unattended=spawn.unattended,
                deadline_mono=deadline_mono, terminated=terminated, relay=spawn.relay)
    from zapcli.backends.sandboxed import agent_sandbox

    box = agent_sandbox(sid, spawn, writer)
    if isinstance(box, Outcome):
        return box
    try:
        settings = load_settings(Path(spawn.workspace))
        host = build_host(spawn.raw, workspace=spawn.workspace, cwd=spawn.cwd, sandbox=box,
                          writable_roots=spawn.writable_roots, providers=settings.providers,
                          approver=gate, deadline_mono=deadline_mono,
                          on_http_error=lambda status, message: writer.append("diagnostic", {
                              "dimension": "model", "name": f"http_{status}", "message": message}))
    except ConfigError as exc:  # edited after spawn: the providers table cannot be trusted
        return Outcome(Status.FAILED, None, f"the config became invalid after spawn: {exc.message}")
    except ModelError as exc:
        return Outcome(Status.FAILED, None, exc.reason)
    for diag in host.diagnostics:
        writer.append("diagnostic", diag)
    history, failure = _history(spawn, writer)
    if failure is not None:
        host.close()
        return failure
    check_report = _report_check(spawn, host)
    inbox = SteerInbox(sid)

    def should_stop() -> tuple[str, str] | None:
        if terminated.is_set():
            return ("cancelled", SIGTERM_REASON)
        if time.monotonic() >= deadline_mono:
            return ("timeout", "deadline reached")
        return None

    try:
        result = host.run(task, _TrailSink(writer, out),
                          hooks=Hooks(approver=gate, steer=inbox.take, check_report=check_report),
                          max_tokens=spawn.max_tokens, should_stop=should_stop, history=history)
    finally:
        host.close()
    for _key, text in inbox.pending():
        writer.append("diagnostic", {"dimension": "steer", "name": "undelivered",
                                     "message": f"not delivered (the subagent ended first): {text[:200]}"})
    if result.report and not result.report.endswith("\n"):
        out.write(b"\n")
    return Outcome(Status(result.status), 0 if result.status == "completed" else None, result.reason)


def _history(spawn: SpawnRecord, writer: TrailWriter) -> tuple[list[dict[str, Any]] | None, Outcome | None]:
    """The conversation a continued subagent carries on (`continue_of`)."""
    prev = spawn.continue_of
    if prev is None:
        return None, None
    from zapcli.backends.history import HistoryError, conversation

    try:
        hist = conversation(prev)
    except HistoryError as exc:
        return None, Outcome(Status.FAILED, None, f"cannot continue {prev}: {exc}")
    if hist.repaired or hist.dropped:
        writer.append("diagnostic", {"dimension": "history", "name": "repaired", "message": (
            f"the conversation of {prev} had {hist.repaired} tool call(s) without a result (closed "
            f"with an error result) and {hist.dropped} result(s) without their call (dropped)")})
    return hist.messages, None


def _report_check(spawn: SpawnRecord, host: Any) -> Any:
    """With `--output-schema`: tell the model the schema, and check its final
    answer — the validation errors go back to it, at most MAX_TRIES answers."""
    schema = spawn.output_schema
    if schema is None:
        return None
    from zapcli import outputschema

    host.system_prompt = (host.system_prompt + "\n\n" if host.system_prompt else "") + \
        outputschema.instructions(schema)
    tries = [0]

    def check(text: str) -> tuple[str, str | None] | None:
        why = outputschema.check(schema, text)
        if why is None:
            return None
        tries[0] += 1
        left = outputschema.MAX_TRIES - tries[0]
        reason = f"{outputschema.REASON}: {why}"
        return (reason, outputschema.feedback(why, left) if left > 0 else None)

    return check


class _TrailSink:
    """Records go to the trail; visible text also to stdout, each turn's on
    its own lines; the report is written synchronously (never lost)."""

    def __init__(self, writer: TrailWriter, out: CappedFile):
        self.writer, self.out = writer, out
        self.at_line_start = True

    def __call__(self, rtype: str, fields: dict[str, Any]) -> None:
        if rtype == "text":
            delta = str(fields.get("delta", ""))
            self.out.write(delta.encode("utf-8", "replace"))
            self.at_line_start = delta.endswith("\n") if delta else self.at_line_start
        if rtype == "report":
            self.writer.write_sync("report", fields, retry_s=5.0)
            return
        if rtype == "tool_call" and not self.at_line_start:
            self.out.write(b"\n")
            self.at_line_start = True
        self.writer.append(rtype, fields)
