"""The opencode backend (docs/explanation/rules.md#agent-clis): `opencode run --format json`, its private
config home, and the parser of its JSON events.

Imports only the standard library and `zapcli.backends.clis.base`.

Launch (measured on opencode 1.18.33):
- argv `opencode run --format json --thinking --title zapcli --model zapcli/<model>`;
  the task goes on stdin (opencode reads stdin to EOF when it is not a TTY and
  appends it to the argv message, which is empty), never on argv.
- Config: XDG_CONFIG/DATA/STATE/CACHE_HOME and OPENCODE_CONFIG_DIR point into
  the config home; OPENCODE_TEST_HOME keeps the user's `~/.opencode` out;
  project config, Claude Code files, external skills, plugins, models.dev,
  auto-update and share are switched off; every inherited OPENCODE_* variable
  is dropped. `opencode.json` names one provider, `zapcli`
  (@ai-sdk/openai-compatible), whose key is `{env:OPENAI_API_KEY}` (never
  written in clear). `node_modules/` + `package-lock.json` in the config dir
  stop opencode from `npm install`ing @opencode-ai/plugin at every start.
- Permissions: opencode headless auto-rejects any "ask" and then ends the
  session silently, so no mode uses "ask": what zapcli would ask about is
  denied by a rule (the model is told and goes on), and `full` adds `--auto`.

Events (one JSON object a line, all carrying `sessionID`): `step_start`,
`text` and `reasoning` (whole parts, not deltas), `tool_use` (a finished call:
input and output together), `step_finish` (`reason`, `tokens`, `cost`: one per
model call), `error`. There is no explicit end event: terminal is a
`step_finish` whose reason is not `tool-calls`/`unknown` (opencode's own loop
stops there), or an `error` (opencode then exits 1).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from zapcli.backends.clis.backend import CliBackend
from zapcli.backends.clis.base import (
    CliLaunch,
    CliRequest,
    EventParser,
    Record,
)
from zapcli.budget import usage as counted
from zapcli.trail.model import Outcome, Status

PROVIDER = "zapcli"
CONFIG_DIR = "config/opencode"  # relative to config_home; also XDG_CONFIG_HOME/opencode
TITLE = "zapcli"
REJECTED = "rejected permission"  # PermissionRejectedError: an "ask" nobody answered
DENIED = "specified a rule which prevents"  # PermissionDeniedError: our deny rules
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# zapcli tool -> opencode permission keys (write, edit and patch are all `edit`).
TOOL_PERMISSIONS: dict[str, tuple[str, ...]] = {
    "read": ("read",), "write": ("edit",), "edit": ("edit",), "bash": ("bash",),
    "grep": ("grep",), "glob": ("glob", "list"), "WebFetch": ("webfetch",),
    "WebSearch": ("websearch",), "todo": ("todowrite",), "use_skill": ("skill",),
}
ALL_KEYS = ("read", "edit", "glob", "grep", "list", "bash", "webfetch", "websearch",
            "todowrite", "skill", "lsp")
ASKING = ("edit", "bash")  # what zapcli's approval modes may ask about (plus MCP)

_ENV_OFF = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1", "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_PURE": "1", "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}


def _diag(name: str, message: str, dimension: str = "tools") -> dict[str, Any]:
    return {"dimension": dimension, "name": name, "message": message}


def permissions(req: CliRequest) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """opencode's `permission` map for the definition's tools under the approval
    mode, and the diagnostics of what could not be mapped exactly."""
    diags: list[dict[str, Any]] = []
    if req.tools is None:  # no definition restricts tools: opencode's own set
        granted = set(ALL_KEYS) - {"lsp"}
    else:
        granted = set()
        for tool in req.tools:
            keys = TOOL_PERMISSIONS.get(tool)
            if keys is None:
                diags.append(_diag(tool, f"opencode has no tool for `{tool}`; not available"))
                continue
            granted.update(keys)
        if ("write" in req.tools) != ("edit" in req.tools):
            have = "write" if "write" in req.tools else "edit"
            diags.append(_diag(have, "opencode grants write, edit and patch together (one `edit` "
                               f"permission): `{have}` brings the other with it"))
        if "WebSearch" in req.tools:
            diags.append(_diag("WebSearch", "opencode's websearch needs its Exa service "
                               "(OPENCODE_ENABLE_EXA); without it the tool is absent"))
    full = req.approval == "full"  # --unattended changes nothing here: no mode ever asks
    perm: dict[str, Any] = {"*": "deny"}
    for key in ALL_KEYS:
        perm[key] = "allow" if key in granted else "deny"
    perm["external_directory"] = "allow" if full or req.approval == "auto-edit" else "deny"
    perm["doom_loop"] = "allow" if full else "deny"
    perm.update(task="deny", question="deny")
    if not full:
        asked = [k for k in ASKING if k in granted and _asks(req, k)]
        for key in asked:
            perm[key] = "deny"
            diags.append(_diag(key, f"`{key}` needs approval under --approval {req.approval}"
                               f"{' --unattended' if req.unattended else ''}; opencode cannot "
                               "ask zapcli, so it is denied (the model is told)", "approval"))
    for srv in req.mcp_servers:
        if full or srv.trusted:  # zapcli's team server: allowed in every mode
            perm[f"{srv.name}_*"] = "allow"
        else:  # not configured at all (its resource tools would come along)
            diags.append(_diag(srv.name, "MCP calls need approval outside --approval full; "
                               "opencode cannot ask zapcli, so this server is not mounted",
                               "mcp"))
    return perm, diags


def _asks(req: CliRequest, key: str) -> bool:
    """Whether zapcli's mode (not full) would ask before `key`: confirm asks for
    edits and bash; workspace and auto-edit for bash (workspace edits outside the
    workspace are the `external_directory` rule)."""
    return req.approval == "confirm" or key == "bash"


def config(req: CliRequest, perm: dict[str, Any]) -> dict[str, Any]:
    """The opencode.json of one subagent."""
    options: dict[str, Any] = {"apiKey": "{env:OPENAI_API_KEY}"}
    options["baseURL"] = ("{env:OPENAI_BASE_URL}" if req.env.get("OPENAI_BASE_URL")
                          else "https://api.openai.com/v1")
    models = {req.model: {"name": req.model}} if req.model else {}
    cfg: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json", "autoupdate": False,
        "share": "disabled", "snapshot": False, "lsp": False, "formatter": False,
        "provider": {PROVIDER: {"npm": "@ai-sdk/openai-compatible", "name": "zapcli",
                                "options": options, "models": models}},
        "enabled_providers": [PROVIDER], "permission": perm,
    }
    if req.model:
        cfg["model"] = cfg["small_model"] = f"{PROVIDER}/{req.model}"
    if req.prompt:
        cfg["instructions"] = [str(req.config_home / CONFIG_DIR / "zapcli-prompt.md")]
    mounted = [s for s in req.mcp_servers if req.approval == "full" or s.trusted]
    if mounted:
        cfg["mcp"] = {s.name: {"type": "local", "command": [s.command, *s.args],
                               "environment": dict(s.env), "enabled": True}
                      for s in mounted}
    return cfg


def environment(req: CliRequest) -> dict[str, str]:
    home = req.config_home
    env = {k: v for k, v in req.env.items() if not k.startswith("OPENCODE")}
    env.update(_ENV_OFF)
    env.update(XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
               XDG_STATE_HOME=str(home / "state"), XDG_CACHE_HOME=str(home / "cache"),
               OPENCODE_CONFIG_DIR=str(home / CONFIG_DIR), OPENCODE_TEST_HOME=str(home / "home"))
    env.setdefault("OPENAI_API_KEY", "none")  # the provider needs some key; local servers ignore it
    return env


class OpencodeBackend(CliBackend):
    name = "opencode"
    summary = "opencode, opencode run"
    binary = "opencode"
    event_format = "opencode-json"
    genai_provider = "openai"
    install_hint = "npm install -g opencode-ai"
    tested = ("1.18.33", "1.19")
    key_env = ("OPENAI_API_KEY",)
    endpoint_env = ("OPENAI_BASE_URL", "https://api.openai.com/v1")
    control_files = ("opencode.json", "opencode.jsonc", ".opencode")  # MCP servers, plugins

    def join_trace(self, req: CliRequest, launch: CliLaunch) -> list[str]:
        """Its spans go out by themselves (OTEL_EXPORTER_OTLP_ENDPOINT) but
        cannot nest: they are tied to the subagent by resource attributes."""
        from zapcli.backends.clis import otel

        return otel.tied(launch.env, self.name)

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        perm, diags = permissions(req)
        argv = [*command, "run", "--format", "json", "--thinking", "--title", TITLE]
        if req.model:
            argv += ["--model", f"{PROVIDER}/{req.model}"]
        else:
            diags.append(_diag("model", "no model given: opencode needs --model", "model"))
        if req.approval == "full":
            argv.append("--auto")  # approve what opencode's defaults would still ask
        if req.resume:
            argv += ["--session", req.resume]
        if req.output_schema is not None:
            diags.append(_diag("output_schema", "opencode run has no structured output",
                               "output"))
        files = {
            f"{CONFIG_DIR}/opencode.json": json.dumps(config(req, perm), indent=2),
            # an existing node_modules whose lock names the plugin: no npm install at start
            f"{CONFIG_DIR}/package-lock.json": json.dumps(
                {"lockfileVersion": 3, "packages": {"": {"dependencies": {
                    "@opencode-ai/plugin": "*"}}}}),
            f"{CONFIG_DIR}/node_modules/.zapcli": "",
            "home/.zapcli": "",
        }
        if req.prompt:
            files[f"{CONFIG_DIR}/zapcli-prompt.md"] = req.prompt
        return CliLaunch(argv=argv, env=environment(req), stdin=req.task.encode(),
                         files=files, diagnostics=diags)

    def refusal(self, model: str | None, env: Mapping[str, str], cwd: str,
                own_program: bool) -> str | None:
        if not model:  # its only provider is ours, whose model list is the one we write
            return ("opencode needs a model: pass --model NAME (a model your OPENAI_BASE_URL "
                    "serves, e.g. --model gpt-4o-mini), or use an --agent whose definition "
                    "names a model")
        return None

    def parser(self, req: CliRequest | None = None) -> EventParser:
        return OpencodeParser(model=req.model if req else None)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _num(obj: Any, *path: str) -> int:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return int(obj) if isinstance(obj, (int, float)) and not isinstance(obj, bool) else 0


class OpencodeParser(EventParser):
    """`opencode run --format json` events -> trail records."""

    event_types = frozenset({"step_start", "step_finish", "text", "reasoning", "tool_use",
                             "error"})

    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self.terminal = False
        self.session_id = None
        self.errors: list[str] = []
        self.rejected: list[str] = []
        self._step_text: list[str] = []
        self._report: str | None = None
        self._last_reason: str | None = None

    def feed(self, event: Any) -> list[Record]:
        if not isinstance(event, dict):
            return [("diagnostic", _diag("event", f"not an event object: {str(event)[:200]}",
                                         "stream"))]
        if isinstance(event.get("sessionID"), str) and self.session_id is None:
            self.session_id = event["sessionID"]
        part = _obj(event.get("part"))
        kind = event.get("type")
        if kind == "step_start":
            self._step_text = []
            return []
        if kind == "text":
            text = part.get("text")
            if isinstance(text, str) and text:
                self._step_text.append(text)
                return [("text", {"delta": text})]
            return []
        if kind == "reasoning":
            text = part.get("text")
            return [("thinking", {"delta": text})] if isinstance(text, str) and text else []
        if kind == "tool_use":
            return self._tool(part)
        if kind == "step_finish":
            return self._step_finish(part)
        if kind == "error":
            return self._error(event.get("error"))
        return [("diagnostic", _diag(str(kind), "unknown opencode event: "
                                     + json.dumps(event)[:200], "stream"))]

    def _tool(self, part: dict[str, Any]) -> list[Record]:
        state = _obj(part.get("state"))
        call_id = str(part.get("callID") or part.get("id") or "")
        name = str(part.get("tool") or "")
        args = _obj(state.get("input"))
        ok = state.get("status") == "completed"
        content = state.get("output") if ok else state.get("error")
        if not isinstance(content, str):
            content = json.dumps(content) if content is not None else ""
        start, end = _num(state, "time", "start"), _num(state, "time", "end")
        out: list[Record] = [
            ("tool_call", {"call_id": call_id, "name": name, "arguments": args}),
            ("tool_result", {"call_id": call_id, "ok": ok, "content": content,
                             "duration_ms": max(0, end - start) if start and end else None}),
        ]
        if not ok and REJECTED in content:
            self.rejected.append(name)
            out.append(("diagnostic", _diag(name, f"opencode asked for permission to use `{name}` "
                                            "and, headless, rejected it: " + content[:500],
                                            "approval")))
        elif not ok and DENIED in content:
            out.append(("diagnostic", _diag(name, f"`{name}` denied by the approval mode: "
                                            + content[:500], "approval")))
        return out

    def _step_finish(self, part: dict[str, Any]) -> list[Record]:
        tokens = _obj(part.get("tokens"))
        # every part apart: input without the cache's, output without reasoning
        usage = counted.parts(self.model, _num(tokens, "input"), _num(tokens, "output"),
                              _num(tokens, "reasoning"), _num(tokens, "cache", "read"),
                              _num(tokens, "cache", "write"))
        cost = part.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            usage["cost"] = cost
        reason = part.get("reason")
        self._last_reason = reason if isinstance(reason, str) else None
        if reason not in ("tool-calls", "unknown"):
            self.terminal = True
            self._report = "\n".join(self._step_text).strip() or None
        return [("usage", usage)]

    def _error(self, error: Any) -> list[Record]:
        message = "opencode error"
        if isinstance(error, dict):
            data = _obj(error.get("data"))
            message = str(data.get("message") or error.get("message") or error.get("name")
                          or message)
        elif error is not None:
            message = str(error)
        self.errors.append(message)
        self.terminal = True
        return [("diagnostic", _diag("error", message, "backend"))]

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        tail = _ANSI.sub("", stderr_tail).strip()
        if self.errors:
            return Outcome(Status.FAILED, None, "; ".join(dict.fromkeys(self.errors))[:2000],
                           self._report)  # the same error said again: once
        if self.rejected and not self._report:
            return Outcome(Status.FAILED, None, "opencode rejected a permission request (it cannot ask "
                              f"headless) for: {', '.join(self.rejected)}; no final answer")
        if not self.terminal:
            why = f"opencode exited ({_code(exit_code)}) without finishing its turn"
            return Outcome(Status.FAILED, None, f"{why}: {tail[-1500:]}" if tail else why)
        if exit_code is not None and exit_code > 0:
            why = f"opencode failed ({_code(exit_code)})"
            return Outcome(Status.FAILED, None, f"{why}: {tail[-1500:]}" if tail else why, self._report)
        if self._report is None:
            return Outcome(Status.FAILED, None, "no report: opencode finished its turn without "
                           f"a final answer (last step: {self._last_reason})")
        return Outcome(Status.COMPLETED, report=self._report)


def _code(exit_code: int | None) -> str:
    return "no exit code" if exit_code is None else f"exit code {exit_code}"
