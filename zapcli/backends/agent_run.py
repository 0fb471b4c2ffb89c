"""The `zapcli` backend, child side: the built-in agent writing to its trail.

Imports `zapcli.agent`, `zapcli.providers`, `zapcli.tools`, `zapcli.capabilities`,
`zapcli.definitions`, `zapcli.trail`. Builds the model client, the granted
tools and the system prompt from the frozen `spawn` record (never from the
YAML layers), runs the loop with the trail as its sink, streams visible text
to stdout, writes the `report` synchronously, and reports steering messages
that were never delivered.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from zapcli.backends.base import Backend, RunContext
from zapcli.backends.gate import Gate
from zapcli.supervisor.capture import CappedFile
from zapcli.trail import reader, store
from zapcli.trail.model import Outcome, SpawnRecord, Status
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
    from zapcli.agent.loop import run_loop
    from zapcli.agent.types import ModelError, ToolContext
    from zapcli.backends.resolve import search_provider
    from zapcli.capabilities.grant import Grant, open_tools
    from zapcli.capabilities.prompt import assemble_prompt
    from zapcli.config import load_settings
    from zapcli.definitions import Definition
    from zapcli.errors import ConfigError
    from zapcli.providers.resolve import build_client
    from zapcli.tools.env import scrubbed_env
    from zapcli.tools.registry import Toolset

    workspace = spawn.workspace
    try:
        settings = load_settings(Path(workspace))
        client = build_client(spawn.model, None, settings.providers, os.environ)
    except ConfigError as exc:  # edited after spawn: the providers table cannot be trusted
        return Outcome(Status.FAILED, None, f"the config became invalid after spawn: {exc.message}")
    except ModelError as exc:
        return Outcome(Status.FAILED, None, exc.reason)
    client.on_http_error = lambda status, message: writer.append(
        "diagnostic", {"dimension": "model", "name": f"http_{status}", "message": message})
    definition = Definition.from_dict(spawn.definition or {})
    grant = Grant.from_dict(spawn.grant or {})
    for diag in spawn.diagnostics:
        writer.append("diagnostic", diag)
    gate = Gate(sid, writer, mode=spawn.approval, workspace=workspace, cwd=spawn.cwd,
                writable_roots=spawn.writable_roots, unattended=spawn.unattended,
                deadline_mono=deadline_mono, terminated=terminated)
    toolset = Toolset(grant.tools, search_provider=search_provider())
    caps = open_tools(grant, approver=gate)
    for diag in caps.diagnostics:
        writer.append("diagnostic", diag)
    env = scrubbed_env(os.environ, definition.env, deny_names=(getattr(client, "api_key_env", ""),))
    ctx = ToolContext(workspace=workspace, cwd=spawn.cwd, env=env,
                      writable_roots=spawn.writable_roots,
                      deadline_monotonic=deadline_mono)
    inbox = SteerInbox(sid)
    at_line_start = [True]

    def sink(rtype: str, fields: dict[str, Any]) -> None:
        if rtype == "text":
            delta = str(fields.get("delta", ""))
            out.write(delta.encode("utf-8", "replace"))
            at_line_start[0] = delta.endswith("\n") if delta else at_line_start[0]
        if rtype == "report":
            writer.write_sync("report", fields, retry_s=5.0)
            return
        if rtype == "tool_call" and not at_line_start[0]:
            out.write(b"\n")  # keep each turn's visible text on its own lines
            at_line_start[0] = True
        writer.append(rtype, fields)

    def should_stop() -> tuple[str, str] | None:
        if terminated.is_set():
            return ("cancelled", "its runner got SIGTERM (not from zapcli kill)")
        if time.monotonic() >= deadline_mono:
            return ("timeout", "deadline reached")
        return None

    try:
        result = run_loop(system_prompt=assemble_prompt(definition, grant), task=task,
                          client=client, tools=[*toolset.tools, *caps.tools], sink=sink, ctx=ctx,
                          max_turns=definition.max_turns, max_tokens=spawn.max_tokens,
                          approver=gate, needs_approval=gate.needs_approval, steer=inbox.take,
                          should_stop=should_stop)
    finally:
        toolset.close()
        caps.close()
    for _key, text in inbox.pending():
        writer.append("diagnostic", {"dimension": "steer", "name": "undelivered",
                                     "message": f"not delivered (the subagent ended first): {text[:200]}"})
    if result.report and not result.report.endswith("\n"):
        out.write(b"\n")
    return Outcome(Status(result.status), 0 if result.status == "completed" else None, result.reason)
