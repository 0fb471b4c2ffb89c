"""The runner's `CliRequest` for an agent-CLI subagent, from its frozen spawn
record (docs/explanation/rules.md#agent-clis). Imports `zapcli.backends.cli_home`, `zapcli.backends.resume`,
`zapcli.capabilities.mcpconfig` (thaw the frozen MCP servers), `zapcli.paths`.

The definition (if any) gives the prompt, the tools (declared, or none:
undeclared means unreachable) and its MCP servers; without a definition the
CLI keeps its own tools. The environment is the runner's (the CLI's own
endpoint and key variables pass through) plus the subagent's marker. For a
backend with an approval hook (claude), outside `full` and `--unattended`,
zapcli's approval server is the CLI's permission prompt tool. With `team:
true`, zapcli's team MCP server is one of its MCP servers. Work in a tree
zapcli created (`--worktree`) is marked so the CLI's trust gate is passed. A `continue_of` resumes the old CLI session in
a copy of the old config home.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from zapcli.backends import cli_home
from zapcli.backends.base import RunContext
from zapcli.backends.clis.base import Cli, CliRequest, McpServer
from zapcli.backends.resume import CannotResume, point
from zapcli.selfexec import python_m
from zapcli.supervisor.launch import MARKER

__all__ = ["CannotResume", "Plan", "build", "APPROVAL_SERVER", "TEAM_SERVER"]
APPROVAL_SERVER = "zapcli_approval"
TEAM_SERVER = "zapcli_team"


@dataclass
class Plan:
    request: CliRequest
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    session_extra: dict[str, Any] = field(default_factory=dict)


def _servers(backend: dict[str, Any]) -> tuple[McpServer, ...]:
    if not backend.get("mcp"):  # most have none: no capabilities and definitions imports (~40 ms)
        return ()
    from zapcli.capabilities.mcpconfig import ServerConfig

    out = []
    for frozen in backend.get("mcp") or ():
        try:
            cfg = ServerConfig.thaw(frozen)
        except (KeyError, TypeError, ValueError):
            continue
        out.append(McpServer(name=cfg.name, command=cfg.command, args=cfg.args,
                             env=cfg.expanded_env(), cwd=cfg.cwd, allow=cfg.allow))
    return tuple(out)


def _own_env() -> dict[str, str]:
    """What zapcli's own servers need whatever the CLI passes them (codex
    passes its MCP servers few variables): the state folder, the import path."""
    from zapcli.paths import own_module_path, state_dir

    env = {"ZAPCLI_HOME": str(state_dir())}
    kept = own_module_path(os.environ.get("PYTHONPATH"))  # absolute entries only: it starts in the workspace
    if kept:
        env["PYTHONPATH"] = kept
    return env


def approval_server(sid: str) -> McpServer:
    """zapcli's stdio MCP server whose `approve` tool turns claude's permission
    requests into this subagent's approval requests."""
    exe, *args = python_m("zapcli.backends.clis.approval_server", "--id", sid)
    return McpServer(name=APPROVAL_SERVER, command=exe, args=tuple(args), env=_own_env())


def team_server(sid: str) -> McpServer:
    """zapcli's team MCP server of subagent `sid`: the board and message tools
    of its own session (docs/explanation/rules.md#fleets-traces-teams), approved in every mode."""
    exe, *args = python_m("zapcli.mcpserver.team", "--id", sid)
    return McpServer(name=TEAM_SERVER, command=exe, args=tuple(args), env=_own_env(), trusted=True)


def build(ctx: RunContext, backend: Cli) -> Plan:
    """The request for `ctx`'s subagent, run by `backend`. Raises
    CannotResume when a continuation's old session is gone."""
    spawn = ctx.spawn
    extra: dict[str, Any] = {}
    resume = usage = None
    continue_of = spawn.raw.get("continue_of")
    if isinstance(continue_of, str) and continue_of:
        at = point(continue_of)
        resume, usage = at.session_id, at.usage
        extra = {"continue_of": continue_of, "resumed_usage": at.usage}
        home = cli_home.make_home(ctx.sid, copy_of=continue_of, drop=backend.resume_drop)
        ctx.writer.write_sync("resumed", {"from": continue_of})  # read: rm, clean, gc may remove it
    else:
        home = cli_home.make_home(ctx.sid)
    definition = spawn.definition
    env = dict(os.environ)
    env[MARKER] = ctx.sid
    schema = spawn.raw.get("output_schema")
    hook = backend.approval_hook and spawn.approval != "full" and not spawn.unattended
    req = CliRequest(
        task=ctx.task, cwd=spawn.cwd, workspace=spawn.workspace, config_home=home, env=env,
        approval=spawn.approval, unattended=spawn.unattended, model=spawn.model,
        prompt=(definition or {}).get("prompt") or None,
        tools=tuple((definition or {}).get("tools") or ()) if definition is not None else None,
        mcp_servers=_servers(spawn.backend or {}) + (
            (team_server(ctx.sid),) if spawn.raw.get("team") else ()),
        output_schema=schema if isinstance(schema, dict) else None,
        resume=resume, resume_usage=usage,
        approval_server=approval_server(ctx.sid) if hook else None,
        own_tree=spawn.worktree is not None,
        sandbox=(definition or {}).get("sandbox") or None,
        budgeted=spawn.max_tokens is not None or isinstance(spawn.raw.get("max_cost"), (int, float)))
    return Plan(req, list(spawn.diagnostics), extra)
