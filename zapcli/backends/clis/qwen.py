"""Qwen Code (`@qwen-code/qwen-code` 0.24) as a subagent backend: how it is
started and how its `--output-format stream-json` events become trail
records (docs/explanation/rules.md#agent-clis). Imports only the standard library,
`zapcli.backends.clis.base` and its siblings `backend`, `claude_events`,
`gemini` (qwen is a fork of the Gemini CLI: the same settings shapes).

Launch (measured against the real CLI, tests/backends/test_qwen_backend.py):
  qwen --auth-type openai --output-format stream-json --approval-mode MODE
       [--model M] [--resume SESSION]
  The task goes on stdin (headless without a TTY: qwen reads stdin to EOF and
  runs it as the prompt), never argv. OPENAI_BASE_URL, OPENAI_API_KEY and
  OPENAI_MODEL pass through: qwen's own OpenAI-compatible provider.
  Environment: the caller's, minus QWEN_* (a QWEN_RUNTIME_DIR or QWEN_SYSTEM_MD
  of the user's would move its files or replace its system prompt), plus
  QWEN_HOME=<config_home>: settings, sessions, usage logs, temp files and
  its installation id all live there, so nothing lands under ~/.qwen (C24);
  HOME stays the user's, for the agent's own commands. It trusts every
  folder: its sandbox shows the folder's `.qwen/` (settings.json could allow
  its shell unasked) and every `.env` there or above (its endpoint) empty
  (`folder_config`).
  Files: settings.json (telemetry, usage statistics, auto-update, IDE and
  its own after-task model calls — memory extraction, skills — off; the
  shell tool in a pipe, not a pty, so a command reading stdin gets EOF (C25);
  `tools.core`, `mcpServers`) and QWEN.md (the definition's prompt: qwen
  adds its home's QWEN.md to the system prompt as the user's memory).

Approval: full -> yolo; workspace, auto-edit -> auto-edit; confirm -> default.
Headless qwen never asks: a call that needs a confirmation in its mode
(shell in auto-edit; shell and edits in default; MCP tools of untrusted
servers) fails with "Qwen Code requires permission", which the model is
told and the parser turns into a diagnostic. Declared MCP servers are
trusted only in full (docs/explanation/rules.md#approvals: MCP calls ask in the other modes).

Events: qwen prints Claude Code's stream-json shapes (system/init with
`qwen_code_version`, assistant, user, result), so its parser is Claude's,
with OpenAI-style usage: qwen's input_tokens already hold the cached ones,
and a result counts its whole session — on `zapcli continue` what the
earlier runs reported is taken off, so tokens are counted once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from zapcli.backends.clis.backend import CliBackend
from zapcli.backends.clis.base import CliLaunch, CliRequest, Record
from zapcli.backends.clis.claude_events import ClaudeEventParser
from zapcli.backends.clis.gemini import mcp_servers

APPROVAL_MODES = {"full": "yolo", "workspace": "auto-edit", "auto-edit": "auto-edit",
                  "confirm": "default"}
# zapcli tool name -> qwen's built-in tools standing for it
TOOL_MAP: dict[str, tuple[str, ...]] = {
    "read": ("read_file",), "write": ("write_file",), "edit": ("edit",),
    "bash": ("run_shell_command",), "grep": ("grep_search",), "glob": ("glob",),
    "WebFetch": ("web_fetch",), "use_skill": ("skill",),
}
# what each headless mode runs without a confirmation (None: everything)
_MODE_ALLOWS: dict[str, set[str] | None] = {
    "default": {"read_file", "grep_search", "glob", "skill"},
    "auto-edit": {"read_file", "grep_search", "glob", "skill", "write_file", "edit",
                  "web_fetch"},
    "yolo": None,
}
NEEDS_PERMISSION = "requires permission to use"
_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens")


def _diag(dimension: str, name: str, message: str) -> dict[str, Any]:
    return {"dimension": dimension, "name": name, "message": message}


def core_tools(tools: tuple[str, ...] | None, mode: str
               ) -> tuple[list[str] | None, list[dict[str, Any]]]:
    """`tools.core` (None: qwen's own set) and the diagnostics: what qwen has
    no tool for, and what headless qwen in `mode` cannot ask before."""
    allows = _MODE_ALLOWS[mode]
    names = tools if tools is not None else ("bash",)  # the one its default set asks for
    core: list[str] = []
    diags: list[dict[str, Any]] = []
    for name in names:
        mapped = TOOL_MAP.get(name)
        if not mapped:
            diags.append(_diag("tools", name, "qwen has no tool for this; not granted"))
            continue
        if allows is not None and any(t not in allows for t in mapped):
            diags.append(_diag("approval", name, f"headless qwen in approval mode {mode} "
                               f"cannot ask zapcli before {', '.join(mapped)}: each call is "
                               "denied (the model is told)"))
        core += [t for t in mapped if t not in core]
    return (core if tools is not None else None), diags


class QwenBackend(CliBackend):
    name = "qwen"
    summary = "Qwen Code, qwen headless (stream-json)"
    binary = "qwen"
    event_format = "qwen-stream-json"
    genai_provider = "openai"
    install_hint = "npm install -g @qwen-code/qwen-code"
    tested = ("0.24.4", "0.25")
    key_env = ("OPENAI_API_KEY",)
    endpoint_env = ("OPENAI_BASE_URL", "https://api.openai.com/v1")
    control_files = (".qwen",)  # settings.json: MCP servers, hooks
    folder_config = (".qwen", ".env")  # settings.json's permissions; its first `.env`
    exit_reasons = {55: "qwen stopped at one of its own run limits (exit 55)"}

    def join_trace(self, req: CliRequest, launch: CliLaunch) -> list[str]:
        """Its telemetry variables (the person's QWEN_TELEMETRY_* first: the
        launch drops QWEN_* otherwise), and the TRACEPARENT preload."""
        from zapcli.backends.clis import otel

        launch.env.update({k: v for k, v in req.env.items() if k.startswith("QWEN_TELEMETRY_")})
        return otel.node_cli(launch.env, "QWEN")

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        mode = APPROVAL_MODES.get(req.approval, "default")
        argv = [*command, "--auth-type", "openai", "--output-format", "stream-json",
                "--approval-mode", mode]
        if req.model:
            argv += ["--model", req.model]
        if req.resume:
            argv += ["--resume", req.resume]
        env = {k: v for k, v in req.env.items() if not k.startswith("QWEN_")}
        env.update(QWEN_HOME=str(req.config_home), QWEN_CODE_NO_RELAUNCH="true",
                   QWEN_CODE_SUPPRESS_YOLO_WARNING="1")
        settings, diags = self.settings(req, mode)
        files = {"settings.json": json.dumps(settings, indent=2)}
        if req.prompt:
            files["QWEN.md"] = req.prompt
        if req.output_schema is not None:
            diags.append(_diag("output", "schema", "zapcli does not pass an output schema to "
                               "qwen: the report is free text"))
        return CliLaunch(argv=argv, env=env, stdin=req.task.encode("utf-8"), files=files,
                         diagnostics=diags)

    def settings(self, req: CliRequest, mode: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """settings.json for `req` under approval `mode`, and its diagnostics."""
        settings: dict[str, Any] = {
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True,
                        "enableAutoUpdate": False},
            "ide": {"enabled": False},
            # no model calls of its own after the task (memory extraction, skills):
            # they cost tokens nobody asked for
            "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False,
                       "enableAutoSkill": False, "enableTeamMemory": False},
        }
        # its shell in a pipe, not a pty: a command that reads stdin gets EOF (C25)
        settings["tools"] = {"shell": {"enableInteractiveShell": False}}
        core, diags = core_tools(req.tools, mode)
        if core is not None:
            settings["tools"]["core"] = core
        servers, more = mcp_servers(req, mode, "qwen")
        diags += more
        if servers:
            settings["mcpServers"] = servers
        return settings, diags

    def refusal(self, model: str | None, env: Mapping[str, str], cwd: str,
                own_program: bool) -> str | None:
        if own_program and not env.get("OPENAI_API_KEY"):
            return ("qwen runs with its OpenAI-compatible provider and OPENAI_API_KEY is not "
                    "set: set it (any value for a local server that checks none), then spawn "
                    "again")
        if not model and not env.get("OPENAI_MODEL"):
            return ("qwen needs a model: pass --model NAME (a model your OPENAI_BASE_URL "
                    "serves) or set OPENAI_MODEL")
        return None

    def parser(self, req: CliRequest | None = None) -> QwenParser:
        return QwenParser(already=req.resume_usage if req else None)


class QwenParser(ClaudeEventParser):
    """Claude's stream-json mapping, for qwen's stream."""

    cli = "qwen"
    version_key = "qwen_code_version"

    def __init__(self, already: Mapping[str, int] | None = None) -> None:
        super().__init__()
        # a resumed session's result counts the whole session: what earlier runs
        # of it reported is taken off (counted once)
        self._counted = {k: int((already or {}).get(k, 0)) for k in _USAGE_KEYS}

    def _user(self, event: dict[str, Any]) -> list[Record]:
        out = super()._user(event)
        for _kind, fields in list(out):
            if not fields.get("ok") and NEEDS_PERMISSION in str(fields.get("content")):
                out.append(("diagnostic", _diag("approval", "permission",
                                                "qwen denied a call it would have asked "
                                                f"about: {str(fields['content'])[:300]}")))
        return out

    def _usage(self, event: dict[str, Any]) -> list[Record]:
        u = event.get("usage")
        if not isinstance(u, dict):
            return []
        total = {"input_tokens": int(u.get("input_tokens") or 0),
                 "output_tokens": int(u.get("output_tokens") or 0),
                 "cached_tokens": int(u.get("cache_read_input_tokens") or 0)}
        fields: dict[str, Any] = {k: max(0, v - self._counted[k]) for k, v in total.items()}
        self._counted = {k: max(v, self._counted[k]) for k, v in total.items()}
        fields["model"] = self.model or self.cli
        return [("usage", fields)] if fields["input_tokens"] or fields["output_tokens"] else []
