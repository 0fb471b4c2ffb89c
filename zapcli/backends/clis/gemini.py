"""The Gemini CLI (0.61) as a subagent backend: how it is started and how its
`--output-format stream-json` events become trail records (docs/explanation/rules.md#agent-clis).
Imports only the standard library and `zapcli.backends.clis.base`.

Launch (measured against the real CLI, see tests/backends/test_gemini_adapter.py):
  gemini --output-format stream-json [--skip-trust] --approval-mode MODE -p ""
         [--model M] [--resume SESSION]
  Folder trust (on by default since 0.61) exits 55 before a word in a folder
  the private home has no trust entry for, as every folder: zapcli passes
  `--skip-trust` in a tree it created (`--worktree`, C25) and in the folder a
  spawn names, unless the user's own gemini marked that folder (or one above
  it) DO_NOT_TRUST in ~/.gemini/trustedFolders.json; GEMINI_RESTRICTED_MODE
  passes through. An exit 55 is then `failed` at once, naming folder trust
  (`exit_reasons`), never the deadline. Trusted, it reads the folder's
  `.gemini/` and takes its environment from the first `.gemini/.env` or
  `.env` there or above (a cloned repository's names its endpoint): its
  sandbox shows them empty (`folder_config`), and zapcli passes what it
  would take from a folder it does not trust, its auth variables
  (`env_file_auth`).
  The task always goes to stdin (never argv, whatever its size): without a TTY
  the CLI reads stdin to EOF (8 MB cap) and puts it before the `-p` text, so
  `-p ""` only forces headless mode. It waits 500 ms for the first stdin byte,
  so the runner must write right after the start (it does: a writer thread).
  Environment: the caller's, plus GEMINI_CLI_HOME=<config_home> (the CLI's
  home for settings, GEMINI.md, sessions; HOME stays the user's, for the
  agent's own commands), GEMINI_CLI_NO_RELAUNCH=true (no second node process
  that ignores SIGTERM), TMPDIR=<config_home>/tmp (the CLI writes error
  reports holding the conversation to os.tmpdir(), 0644); GEMINI_SYSTEM_MD and
  GEMINI_WRITE_SYSTEM_MD are dropped (they would replace the system prompt).
  GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY pass through.
  Files: .gemini/settings.json (API-key auth, telemetry / usage statistics /
  auto-update / IDE off, tools.core, mcpServers) and .gemini/GEMINI.md (the
  definition's prompt: the CLI appends it to its system prompt as loaded
  context).

Approval: full -> yolo; workspace, auto-edit -> auto_edit; confirm -> default.
Headless Gemini never asks: whatever needs a confirmation in that mode
(shell in auto_edit; shell, write_file, replace, web_fetch in default; MCP
tools of untrusted servers) is removed from the model's tools and a call to it
fails with `tool_not_registered`, which the parser turns into a diagnostic.
`--unattended` therefore changes nothing here. Declared MCP servers are
trusted only in full (docs/explanation/rules.md#approvals: MCP calls ask in the other modes); zapcli's
team server (the board and messages) is trusted in every mode.
`tools.core` is an allowlist that also auto-approves what it lists, so it
only ever lists tools the approval mode allows anyway.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from zapcli.backends.clis.backend import CliBackend
from zapcli.backends.clis.base import (
    CliLaunch,
    CliRequest,
    EventParser,
    Record,
)
from zapcli.budget import usage
from zapcli.trail.model import Outcome, Status

APPROVAL_MODES = {"full": "yolo", "workspace": "auto_edit", "auto-edit": "auto_edit",
                  "confirm": "default"}

# zapcli tool name -> the Gemini CLI's built-in tools standing for it
TOOL_MAP: dict[str, tuple[str, ...]] = {
    "read": ("read_file",), "write": ("write_file",), "edit": ("replace",),
    "bash": ("run_shell_command",), "grep": ("grep_search",), "glob": ("glob", "list_directory"),
    "WebFetch": ("web_fetch",), "WebSearch": ("google_web_search",),
    "task_output": ("list_background_processes", "read_background_output"),
    "use_skill": ("activate_skill",), "todo": ("write_todos",),
}
_READ_ONLY = {"read_file", "list_directory", "grep_search", "glob", "google_web_search"}
# what each headless approval mode lets run without a confirmation
_MODE_ALLOWS: dict[str, set[str] | None] = {
    "default": _READ_ONLY,
    "auto_edit": _READ_ONLY | {"write_file", "replace", "web_fetch"},
    "yolo": None,  # everything
}
DENIED_ERRORS = {"tool_not_registered", "policy_violation", "path_not_in_workspace",
                 "sandbox_expansion_required"}


def _diag(dimension: str, name: str, message: str) -> dict[str, Any]:
    return {"dimension": dimension, "name": name, "message": message}


def core_tools(tools: tuple[str, ...], mode: str, mcp_names: list[str]
               ) -> tuple[list[str], list[dict[str, Any]]]:
    """`tools.core` for the granted zapcli `tools` under approval `mode`, and
    the diagnostics for what Gemini cannot grant."""
    allows = _MODE_ALLOWS[mode]
    core: list[str] = []
    diags: list[dict[str, Any]] = []
    for name in tools:
        mapped = TOOL_MAP.get(name)
        if not mapped:
            diags.append(_diag("tools", name, "the Gemini CLI has no tool for this; not granted"))
            continue
        denied = [t for t in mapped if allows is not None and t not in allows]
        if denied:
            diags.append(_diag("approval", name, f"headless Gemini in approval mode {mode} "
                               f"cannot ask before {', '.join(denied)}: denied"))
        core += [t for t in mapped if t not in denied and t not in core]
        if name == "todo":
            diags.append(_diag("tools", name, "write_todos exists only for gemini-2.x models"))
    if allows is None:
        core += [f"mcp_{n}_*" for n in mcp_names]
    return core, diags


def mcp_servers(req: CliRequest, mode: str, who: str
                ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """settings.json's `mcpServers` for the definition's servers (trusted, so
    never asked about, only in yolo — zapcli's team server always) and a
    diagnostic per untrusted one: the Gemini CLI's shape, which its fork
    qwen shares."""
    trusted = mode == "yolo"
    servers: dict[str, Any] = {}
    diags: list[dict[str, Any]] = []
    for s in req.mcp_servers:
        entry: dict[str, Any] = {"command": s.command, "args": list(s.args),
                                 "trust": trusted or s.trusted}  # zapcli's team server: always
        if s.env:
            entry["env"] = dict(s.env)
        if s.cwd:
            entry["cwd"] = s.cwd
        servers[s.name] = entry
        if not trusted and not s.trusted:
            diags.append(_diag("mcp", s.name, f"headless {who} in approval mode {mode} "
                               "cannot ask before an MCP call: its tools are denied"))
    return servers, diags


class GeminiBackend(CliBackend):
    name = "gemini"
    summary = "the Gemini CLI, gemini -p"
    binary = "gemini"
    event_format = "gemini-stream-json"
    genai_provider = "gcp.gemini"
    install_hint = "npm install -g @google/gemini-cli"
    tested = ("0.61.0", "0.62")
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    endpoint_env = ("GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com")
    control_files = (".gemini",)  # settings.json: MCP servers, hooks, tool discovery commands
    folder_config = (".gemini", ".env")  # its first `.gemini/.env` or `.env` sets its environment
    exit_reasons = {55: "the Gemini CLI refused a folder it does not trust (exit 55, folder "
                        "trust): your ~/.gemini/trustedFolders.json marks it DO_NOT_TRUST, or "
                        "GEMINI_RESTRICTED_MODE is set; trust the folder in gemini, or spawn "
                        "with --worktree (zapcli trusts the trees it creates)"}

    def join_trace(self, req: CliRequest, launch: CliLaunch) -> list[str]:
        """Its telemetry variables, and the TRACEPARENT preload (it reads none)."""
        from zapcli.backends.clis import otel

        return otel.node_cli(launch.env, "GEMINI")

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        mode = APPROVAL_MODES.get(req.approval, "default")
        argv = [*command, "--output-format", "stream-json", "--approval-mode", mode, "-p", ""]
        if req.own_tree or not distrusted(req.cwd, req.env):  # C25: see the module docstring
            argv.insert(len(command) + 2, "--skip-trust")
        if req.model:
            argv += ["--model", req.model]
        if req.resume:
            argv += ["--resume", req.resume]
        home = req.config_home
        env = {k: v for k, v in req.env.items()
               if k not in ("GEMINI_SYSTEM_MD", "GEMINI_WRITE_SYSTEM_MD")}
        env.update(GEMINI_CLI_HOME=str(home), GEMINI_CLI_NO_RELAUNCH="true",
                   TMPDIR=str(home / "tmp"))
        # its sandbox shows a .env empty: the credentials it would take from one, given here
        env.update({k: v for k, v in env_file_auth(req.cwd, req.env).items() if not env.get(k)})
        settings, diags = self.settings(req, mode)
        files = {".gemini/settings.json": json.dumps(settings, indent=2),
                 "tmp/.zapcli": "private TMPDIR of this subagent's gemini\n"}
        if req.prompt:
            files[".gemini/GEMINI.md"] = req.prompt
        if req.output_schema is not None:
            diags.append(_diag("output", "schema", "the Gemini CLI has no structured-output "
                               "option: the report is free text"))
        return CliLaunch(argv=argv, env=env, stdin=req.task.encode("utf-8"), files=files,
                         diagnostics=diags)

    def settings(self, req: CliRequest, mode: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """settings.json for `req` under approval `mode`, and its diagnostics."""
        settings: dict[str, Any] = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "ide": {"enabled": False},
        }
        servers, diags = mcp_servers(req, mode, "Gemini")
        if servers:
            settings["mcpServers"] = servers
        if req.tools is not None:
            core, more = core_tools(req.tools, mode, list(servers))
            core += [f"mcp_{s.name}_*" for s in req.mcp_servers if s.trusted and mode != "yolo"]
            settings["tools"] = {"core": core}
            diags += more
        return settings, diags

    def refusal(self, model: str | None, env: Mapping[str, str], cwd: str,
                own_program: bool) -> str | None:
        # settings.json selects API-key auth; the CLI also reads a .env file it finds
        if own_program and not env.get("GEMINI_API_KEY") and "GEMINI_API_KEY" not in \
                env_file_auth(cwd, env):
            return ("the Gemini CLI runs with API-key auth and GEMINI_API_KEY is not set: set "
                    "it (any value for a local server that checks none), then spawn again")
        return None

    def parser(self, req: CliRequest | None = None) -> GeminiParser:
        return GeminiParser()


def distrusted(cwd: str, env: Mapping[str, str]) -> bool:
    """Whether the user's own Gemini CLI marked `cwd` or a folder above it
    DO_NOT_TRUST (~/.gemini/trustedFolders.json: path -> trust level)."""
    home = Path(env.get("HOME") or Path.home())
    try:
        rules = json.loads((home / ".gemini" / "trustedFolders.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    folder = Path(cwd).resolve()
    return isinstance(rules, dict) and any(
        level == "DO_NOT_TRUST" and (folder == Path(p) or Path(p) in folder.parents)
        for p, level in rules.items() if isinstance(p, str) and p)


# what the CLI takes from a .env file in a folder it does not trust (its own list)
AUTH_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")


def env_file_auth(cwd: str, env: Mapping[str, str]) -> dict[str, str]:
    """The credentials in the .env file the Gemini CLI would load — the first
    of `.gemini/.env` or `.env` in `cwd` or a parent, or in the home folder,
    as the CLI looks — taken as the CLI takes them from a folder it does not
    trust: its auth variables alone, each value cut to `[A-Za-z0-9._/-]`.
    In its sandbox every such file reads empty (`folder_config`): the rest of
    one a repository ships would set its endpoint, its proxy. An empty one (a
    sandbox's placeholder, held while another subagent of that folder runs)
    names none. One that is a link (or lies in a `.gemini` that is) leading
    out of the folder it is found in is not read: in the sandbox the CLI
    could not read where it leads (the person's home, say), and zapcli,
    reading for it, would hand it a key from there."""
    import re

    folder = Path(cwd).resolve()
    home = Path(env.get("HOME") or Path.home())
    for place in (folder, *folder.parents, home):
        for found in (place / ".gemini" / ".env", place / ".env"):
            if found.exists():
                real = os.path.realpath(found)
                if place != home and os.path.commonpath((real, str(place))) != str(place):
                    return {}
                text = _text_of(found)
                if text is None:
                    return {}
                out = {}
                for line in text.splitlines():
                    key, sep, value = line.strip().removeprefix("export ").partition("=")
                    if sep and key.strip() in AUTH_ENV:
                        out[key.strip()] = re.sub(r"[^a-zA-Z0-9\-_./]", "", value.split(" #")[0])
                return {k: v for k, v in out.items() if v}
    return {}


def _text_of(path: Path) -> str | None:
    """A regular file of this user's: its first MB as text; None for anything
    else (a FIFO an agent made in its place would block the read for good:
    `zapcli.boundedread` opens regular files only; another user's, left in a
    folder above that others write in, /tmp say, would hand gemini their key,
    which it prefers) or unreadable."""
    from zapcli.boundedread import open_regular

    try:
        with os.fdopen(open_regular(path), "rb") as fh:
            if os.fstat(fh.fileno()).st_uid != os.getuid():
                return None
            return fh.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None


def _ts(event: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(event["timestamp"]).replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError):
        return None


class GeminiParser(EventParser):
    """stream-json events -> records. Gemini prints no thinking and no final
    text of its own: the report is the assistant text of the last model turn
    (the deltas after the last tool result; all text when there was none). A
    last turn without text is no report, however much an earlier one said."""

    event_types = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})

    def __init__(self) -> None:
        self.model: str | None = None
        self.result: dict[str, Any] | None = None
        self._all: list[str] = []
        self._turn: list[str] = []
        self._calls: dict[str, tuple[str, float | None]] = {}
        self._last_error: str | None = None
        self._usage_sent = False

    def feed(self, event: Any) -> list[Record]:
        if not isinstance(event, dict):
            return [("diagnostic", _diag("cli", "event", f"not an event object: {str(event)[:200]}"))]
        kind = event.get("type")
        if kind == "init":
            self.session_id = event.get("session_id") or self.session_id
            self.model = event.get("model") or self.model
            return []
        if kind == "message":
            if event.get("role") != "assistant" or not isinstance(event.get("content"), str):
                return []
            self._all.append(event["content"])
            self._turn.append(event["content"])
            return [("text", {"delta": event["content"]})]
        if kind == "tool_use":
            call_id = str(event.get("tool_id") or "")
            name = str(event.get("tool_name") or "")
            self._calls[call_id] = (name, _ts(event))
            self._turn = []
            return [("tool_call", {"call_id": call_id, "name": name,
                                   "arguments": event.get("parameters") or {}})]
        if kind == "tool_result":
            return self._tool_result(event)
        if kind == "error":
            message = str(event.get("message") or "")
            severity = str(event.get("severity") or "error")
            if severity == "error":
                self._last_error = message
            return [("diagnostic", _diag("cli", severity, message))]
        if kind == "result":
            return self._result(event)
        return []

    def _tool_result(self, event: dict[str, Any]) -> list[Record]:
        call_id = str(event.get("tool_id") or "")
        name, started = self._calls.get(call_id, ("", None))
        error = event.get("error") if isinstance(event.get("error"), dict) else None
        ok = event.get("status") == "success" and error is None
        content = event.get("output")
        if not isinstance(content, str):
            content = (error or {}).get("message") or ""
        fields: dict[str, Any] = {"call_id": call_id, "ok": ok, "content": content}
        ended = _ts(event)
        if started is not None and ended is not None:
            fields["duration_ms"] = max(0, round((ended - started) * 1000))
        self._turn = []
        out: list[Record] = [("tool_result", fields)]
        if error and error.get("type") in DENIED_ERRORS:
            out.append(("diagnostic", _diag("approval", name or call_id,
                                            f"denied ({error['type']}): {error.get('message')}")))
        return out

    def _result(self, event: dict[str, Any]) -> list[Record]:
        self.terminal = True
        self.result = event
        out: list[Record] = []
        stats = event.get("stats")
        if isinstance(stats, dict) and not self._usage_sent:
            self._usage_sent = True
            out.append(("usage", self._usage(stats)))
        return out

    def _usage(self, stats: dict[str, Any]) -> dict[str, Any]:
        """One record for the whole run: the CLI's totals over every model it
        called (the main model and its utility calls, e.g. the router)."""
        models = stats.get("models") if isinstance(stats.get("models"), dict) else {}
        model = self.model
        if (not model or model == "auto") and models:
            model = max(models, key=lambda m: int((models[m] or {}).get("total_tokens") or 0))
        # Gemini's shape: the cache within the prompt, thoughts beside the candidates; the
        # stats say thoughts only in the total (what it holds beyond prompt and candidates)
        return {**usage.gemini(model, stats.get("input_tokens"), stats.get("output_tokens"),
                               cached=stats.get("cached"), total=stats.get("total_tokens")),
                "total_tokens": int(stats.get("total_tokens") or 0), "models": models}

    def report(self) -> str:
        """The last model turn's text: never an earlier turn's preamble (C29)."""
        return "".join(self._turn)

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        if self.result is None:
            lines = [ln for ln in stderr_tail.splitlines() if ln.strip()]
            reason = "\n".join(lines[-5:]) or f"gemini exited with code {exit_code} and no result"
            return Outcome(Status.FAILED, None, reason, self.report() or None)
        if self.result.get("status") == "success":
            return Outcome(Status.COMPLETED, report=self.report())
        error = self.result.get("error") if isinstance(self.result.get("error"), dict) else {}
        reason = (error or {}).get("message") or self._last_error or \
            f"gemini reported status {self.result.get('status')!r}"
        return Outcome(Status.FAILED, None, str(reason), self.report() or None)
