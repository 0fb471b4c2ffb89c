"""Claude Code (`claude`, measured on 2.1.328) as a backend: how it is started.
Imports the standard library, `zapcli.backends.clis.base` /
`.claude_events` (the event parser) and `zapcli.approvals` (which
allowlisted MCP tools run unasked).

Launch (docs/explanation/rules.md#agent-clis): `claude -p --output-format stream-json --verbose
--setting-sources user`, the task always on stdin (never on argv), the
private config home in CLAUDE_CONFIG_DIR (so `user` settings are zapcli's own
and the workspace's project/local settings, hooks and agents stay out), MCP
servers in `<config_home>/mcp.json` via `--mcp-config` + `--strict-mcp-config`
(a trusted one, zapcli's team server, also in `--allowedTools`: never asked about;
so are a server's allowlisted tools where zapcli's decision lets them run unasked),
the definition's prompt via `--append-system-prompt-file`, its tools via `--tools`
(the built-in set made available; MCP tools are not affected by it).

Approval modes: full → bypassPermissions (as root only with IS_SANDBOX=1);
workspace and auto-edit → acceptEdits; confirm → default with an approval
hook, else dontAsk. With `req.approval_server` (and not unattended) every
ask goes to `--permission-prompt-tool mcp__<server>__approve`; otherwise
`--permission-prompts none` denies every ask at once (the model is told) and
the parser records each denial as a diagnostic. Claude Code calls the prompt
tool with {tool_name, input, tool_use_id} and expects one text block holding
{"behavior": "allow", "updatedInput": {...}} or {"behavior": "deny",
"message": "..."}; the tool itself is hidden from the model (disallowed).

Environment: the caller's, plus CLAUDE_CONFIG_DIR, XDG_CACHE_HOME in the config
home (Claude Code keeps MCP logs there, else under ~/.cache), no non-essential traffic
(no telemetry, update checks or preconnects: the only host contacted is
ANTHROPIC_BASE_URL), CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS=0 unless set (C18:
zapcli's own timeout is the only clock), CLAUDE_CODE_TMPDIR in the config
home unless set, session state events on (the
parser's end-of-work signal), tool search off when MCP servers are declared.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from zapcli.backends.clis.backend import CliBackend
from zapcli.backends.clis.base import CliLaunch, CliRequest, EventParser, McpServer
from zapcli.backends.clis.claude_events import ClaudeEventParser

# zapcli tool name (lower case) -> Claude Code built-in tools
TOOL_MAP: dict[str, tuple[str, ...]] = {
    "bash": ("Bash",), "task_output": (), "task_stop": ("TaskStop",), "read": ("Read",),
    "write": ("Write",), "edit": ("Edit", "NotebookEdit"), "glob": ("Glob",), "grep": ("Grep",),
    "webfetch": ("WebFetch",), "websearch": ("WebSearch",), "use_skill": ("Skill",),
    "todo": ("TodoWrite",),
}
# never offered: they need a person at a screen (docs/explanation/rules.md#undeclared-means-unreachable)
ALWAYS_DENIED = ("AskUserQuestion",)
MODES = {"full": "bypassPermissions", "workspace": "acceptEdits", "auto-edit": "acceptEdits",
         "confirm": "default"}
APPROVAL_TOOL = "approve"
MCP_FILE = "mcp.json"
PROMPT_FILE = "append-system-prompt.md"
_FIXED_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS": "1",
}
# any of them lets Claude Code authenticate without a login in its config folder
AUTH_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
# set when Claude Code itself started zapcli: they bind to the outer session
_DROPPED_ENV = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _diag(name: str, message: str) -> dict[str, Any]:
    return {"dimension": "backend", "name": name, "message": message}


def mcp_tool_name(server: str, tool: str) -> str:
    """The name Claude Code gives an MCP server's tool (in --allowedTools, and
    in what it asks its permission prompt about): mcp__<server>__<tool>, each
    with what is not a letter, digit, _ or - made _ (as Claude Code does)."""
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"


def prompt_tool_name(server: McpServer) -> str:
    """The --permission-prompt-tool name of an approval server: mcp__<server>__approve."""
    return f"mcp__{server.name}__{APPROVAL_TOOL}"


def _mcp_entry(s: McpServer) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio", "command": s.command, "args": list(s.args),
                             "alwaysLoad": True}
    if s.cwd:  # Claude Code's MCP config has no cwd: start the server through sh
        entry["command"], entry["args"] = "/bin/sh", [
            "-c", 'cd -- "$1" && shift && exec "$@"', "sh", s.cwd, s.command, *s.args]
    if s.env:
        entry["env"] = dict(s.env)
    return entry


def map_tools(tools: tuple[str, ...]) -> tuple[list[str], list[dict[str, Any]]]:
    """Claude Code built-ins for zapcli tool names, and diagnostics for the rest."""
    out: list[str] = []
    diags: list[dict[str, Any]] = []
    for name in tools:
        mapped = TOOL_MAP.get(name.strip().lower())
        if mapped is None:
            diags.append(_diag("tools", f"tool {name!r} has no Claude Code equivalent; not granted"))
            continue
        if not mapped:
            diags.append(_diag("tools", f"tool {name!r}: Claude Code has no separate tool "
                                        "(background output is read with Read)"))
        out += [m for m in mapped if m not in out]
    return out, diags


def _permission_args(req: CliRequest, env: dict[str, str],
                     diags: list[dict[str, Any]]) -> list[str]:
    if req.approval == "full":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # bypass mode refuses to start as root without it
        return ["--permission-mode", "bypassPermissions"]
    mode = MODES.get(req.approval)
    if mode is None:
        diags.append(_diag("approval", f"unknown approval mode {req.approval!r}; using confirm"))
        mode = "default"
    if mode == "acceptEdits":
        diags.append(_diag("approval", "Claude Code's acceptEdits also runs filesystem shell "
                                       "commands (mkdir, touch, cp, mv, redirects) inside the "
                                       "working directories without asking"))
    if req.approval_server is not None and not req.unattended:
        return ["--permission-mode", mode, "--permission-prompt-tool",
                prompt_tool_name(req.approval_server)]
    if mode == "default":
        mode = "dontAsk"  # nobody can answer: the most restrictive mode that never blocks
    return ["--permission-mode", mode, "--permission-prompts", "none"]


def _unasked_mcp(req: CliRequest) -> list[str]:
    """The allowlisted MCP tools (mcp.json `allow`) that zapcli's decision lets
    run without asking in this approval mode (`zapcli.approvals.decide`: not
    in `confirm`), for --allowedTools; the relay's gate decides the same."""
    from zapcli.approvals import MODES, decide

    if req.approval not in MODES or decide(
            req.approval, "mcp_call", {}, workspace=req.workspace, cwd=req.cwd,
            writable_roots=(), unattended=req.unattended, mcp_allowlisted=True).action != "allow":
        return []
    return [mcp_tool_name(s.name, t) for s in req.mcp_servers if not s.trusted for t in s.allow]


def _environment(req: CliRequest) -> dict[str, str]:
    env = {k: v for k, v in req.env.items() if k not in _DROPPED_ENV}
    env.update(_FIXED_ENV)
    env["CLAUDE_CONFIG_DIR"] = str(req.config_home)
    # its cache (MCP server logs, errors) goes to $XDG_CACHE_HOME/claude-cli-nodejs, else
    # ~/.cache: in the private home too (C24); the agent's own commands inherit it
    env["XDG_CACHE_HOME"] = str(req.config_home / "cache")
    env.setdefault("CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS", "0")
    # background task output and sockets inside the private home, not /tmp/claude-<uid>
    env.setdefault("CLAUDE_CODE_TMPDIR", str(req.config_home / "tmp"))
    if req.mcp_servers:
        env.setdefault("ENABLE_TOOL_SEARCH", "false")  # MCP tools offered directly
    return env


class ClaudeBackend(CliBackend):
    name = "claude"
    summary = "Claude Code, claude -p"
    binary = "claude"
    event_format = "claude-stream-json"
    genai_provider = "anthropic"
    install_hint = "npm install -g @anthropic-ai/claude-code"
    approval_hook = True  # --permission-prompt-tool: its asks become zapcli approval requests
    tested = ("2.1.328", "2.2")
    key_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
               "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
               "AWS_BEARER_TOKEN_BEDROCK")
    endpoint_env = ("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
    control_files = (".claude",)  # settings.json hooks, commands, agents, skills

    def join_trace(self, req: CliRequest, launch: CliLaunch) -> list[str]:
        """It reads TRACEPARENT; its spans need its telemetry and tracing beta on."""
        from zapcli.backends.clis import otel

        return otel.claude(launch.env)

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        env = _environment(req)
        diags: list[dict[str, Any]] = []
        argv = [*command, "-p", "--output-format", "stream-json", "--verbose",
                "--setting-sources", "user"]
        if req.budgeted:  # each call said as it starts (message_start), so the budget stops it there
            argv.append("--include-partial-messages")
        if req.resume:
            argv += ["--resume", req.resume]
        if req.model:
            argv += ["--model", req.model]
        files: dict[str, str] = {}
        if req.prompt:  # from a file: no argv length limit, nothing in `ps`
            files[PROMPT_FILE] = req.prompt
            argv += ["--append-system-prompt-file", str(req.config_home / PROMPT_FILE)]
        if req.workspace and os.path.abspath(req.workspace) != os.path.abspath(req.cwd):
            argv += ["--add-dir", req.workspace]
        argv += _permission_args(req, env, diags)
        denied = list(ALWAYS_DENIED)
        if req.tools is not None:
            tools, tool_diags = map_tools(req.tools)
            diags += tool_diags
            argv += ["--tools", ",".join(tools)]
        servers = list(req.mcp_servers)
        if req.approval_server is not None:
            servers.append(req.approval_server)
            denied.append(prompt_tool_name(req.approval_server))  # the model never calls it
        files[MCP_FILE] = json.dumps({"mcpServers": {s.name: _mcp_entry(s) for s in servers}},
                                     indent=2)
        argv += ["--mcp-config", str(req.config_home / MCP_FILE), "--strict-mcp-config"]
        trusted = [f"mcp__{s.name}" for s in servers if s.trusted]  # every tool of the server
        trusted += _unasked_mcp(req)
        if trusted:
            argv += ["--allowedTools", ",".join(trusted)]
        argv += ["--disallowedTools", ",".join(denied)]
        if req.output_schema is not None:
            argv += ["--json-schema", json.dumps(req.output_schema)]
        return CliLaunch(argv=argv, env=env, stdin=req.task.encode("utf-8"), files=files,
                         diagnostics=diags)

    def refusal(self, model: str | None, env: Mapping[str, str], cwd: str,
                own_program: bool) -> str | None:
        # its config folder is private to the subagent: a `claude /login` is not there
        if own_program and not any(env.get(k) for k in AUTH_ENV):
            return ("Claude Code runs with a config folder of its own, so your `claude /login` "
                    "is not used: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or "
                    "CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`), then spawn again")
        return None

    def parser(self, req: CliRequest | None = None) -> EventParser:
        return ClaudeEventParser()
