"""pi (`@mariozechner/pi-coding-agent` 0.73), the minimal coding agent, as a
subagent backend: how it is started and how its `--mode json` events become
trail records (docs/explanation/rules.md#agent-clis). Imports only the standard library,
`zapcli.backends.clis.base` and its sibling `backend`.

Launch (measured against the real CLI, tests/backends/test_cli_backends.py):
  pi --mode json -p --provider zapcli --model M [--tools LIST]
     [--append-system-prompt FILE] [--session ID] --no-extensions --no-skills
     --no-prompt-templates --no-themes
  The task goes on stdin (with `-p` and no message on argv pi reads stdin to
  EOF as the prompt), never argv.
  Environment: the caller's, minus PI_* (a PI_PACKAGE_DIR or session folder of
  the user's), plus PI_CODING_AGENT_DIR=<config_home>/agent (its settings,
  models, auth and sessions: nothing lands under ~/.pi, C24), PI_OFFLINE and
  PI_SKIP_VERSION_CHECK (no start-up traffic: the only host contacted is the
  model's), PI_TELEMETRY=0.
  Files: agent/models.json naming one provider, `zapcli`
  (openai-completions at OPENAI_BASE_URL), whose key is the name
  OPENAI_API_KEY (pi reads the value from the environment: never written in
  clear); agent/prompt.md, the definition's prompt. The folder's own `.pi/`
  (settings.json: a `shellCommandPrefix` run before every command) its
  sandbox shows empty (`folder_config`).

Approval: pi has no permission prompts at all — every tool it has runs. So
zapcli's modes are mapped by the tools it is given: full → what the
definition grants; workspace and auto-edit → no bash (zapcli would ask);
confirm → read-only tools. pi's edits are not confined to the workspace and it has no
structured output, each said in a diagnostic; it has no MCP client (its
`restricts` leaves `mcp` out, so spawn says a definition's servers do not
apply).

Events (one JSON object a line): `session` (its id), `message_end` of an
assistant message → thinking / text / tool_call records and one usage record
(per model call; a `stopReason` of error or aborted ends it failed with
`errorMessage`), `tool_execution_end` → tool_result, `auto_retry_start` →
diagnostic, `agent_end` → terminal; deltas (`message_update`) are passed over.
The report is the last assistant message's text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from zapcli.backends.clis.backend import CliBackend
from zapcli.backends.clis.base import CliLaunch, CliRequest, EventParser, Record
from zapcli.budget import usage as counted
from zapcli.trail.model import Outcome, Status

PROVIDER = "zapcli"
AGENT_DIR = "agent"
TOOL_MAP: dict[str, tuple[str, ...]] = {
    "read": ("read",), "write": ("write",), "edit": ("edit",), "bash": ("bash",),
    "grep": ("grep",), "glob": ("find", "ls"),
}
DEFAULT_TOOLS = ("read", "bash", "edit", "write")  # what pi offers when not told
READ_ONLY = {"read", "grep", "find", "ls"}


def _diag(dimension: str, name: str, message: str) -> dict[str, Any]:
    return {"dimension": dimension, "name": name, "message": message}


def tools_for(req: CliRequest) -> tuple[list[str], list[dict[str, Any]]]:
    """pi's `--tools` allowlist for the definition's tools under the approval
    mode (pi never asks: what zapcli would ask about is left out)."""
    diags: list[dict[str, Any]] = []
    if req.tools is None:
        granted = list(DEFAULT_TOOLS)
    else:
        granted = []
        for tool in req.tools:
            mapped = TOOL_MAP.get(tool)
            if mapped is None:
                diags.append(_diag("tools", tool, f"pi has no tool for `{tool}`; not available"))
            granted += [t for t in (mapped or ()) if t not in granted]
    if req.approval == "confirm":
        withheld = [t for t in granted if t not in READ_ONLY]
    elif req.approval in ("workspace", "auto-edit"):
        withheld = [t for t in granted if t == "bash"]
    else:
        withheld = []
    for tool in withheld:
        diags.append(_diag("approval", tool, f"pi cannot ask before `{tool}` and zapcli would "
                           f"under --approval {req.approval}: it is not given the tool"))
    if req.approval != "full" and {"edit", "write"} & (set(granted) - set(withheld)):
        diags.append(_diag("approval", "edit", "pi's edits are not confined to the workspace "
                           "(it has no permission rules)"))
    return [t for t in granted if t not in withheld], diags


class PiBackend(CliBackend):
    name = "pi"
    summary = "pi, the minimal coding agent (pi -p --mode json)"
    binary = "pi"
    event_format = "pi-json"
    genai_provider = "openai"
    install_hint = "npm install -g @mariozechner/pi-coding-agent"
    tested = ("0.73.1", "0.74")
    key_env = ("OPENAI_API_KEY",)
    endpoint_env = ("OPENAI_BASE_URL", "https://api.openai.com/v1")
    control_files = (".pi",)  # settings.json and extensions, loaded as code
    folder_config = (".pi",)  # its settings.json: a shellCommandPrefix runs before each command
    restricts: tuple[str, ...] = ("prompt", "model", "tools")  # no MCP client

    def launch(self, req: CliRequest, command: list[str]) -> CliLaunch:
        tools, diags = tools_for(req)
        argv = [*command, "--mode", "json", "-p", "--provider", PROVIDER,
                "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
        if req.model:
            argv += ["--model", req.model]
        argv += ["--tools", ",".join(tools)] if tools else ["--no-tools"]
        home = req.config_home
        files = {f"{AGENT_DIR}/models.json": json.dumps(models(req), indent=2)}
        if req.prompt:
            files[f"{AGENT_DIR}/prompt.md"] = req.prompt
            argv += ["--append-system-prompt", str(home / AGENT_DIR / "prompt.md")]
        if req.resume:
            argv += ["--session", req.resume]
        if req.output_schema is not None:
            diags.append(_diag("output", "schema", "pi has no structured output: the report "
                               "is free text"))
        env = {k: v for k, v in req.env.items() if not k.startswith("PI_")}
        env.update(PI_CODING_AGENT_DIR=str(home / AGENT_DIR), PI_OFFLINE="1",
                   PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0")
        return CliLaunch(argv=argv, env=env, stdin=req.task.encode("utf-8"), files=files,
                         diagnostics=diags)

    def refusal(self, model: str | None, env: Mapping[str, str], cwd: str,
                own_program: bool) -> str | None:
        if not model:  # its only provider is ours, whose model list is the one we write
            return ("pi needs a model: pass --model NAME (a model your OPENAI_BASE_URL "
                    "serves), or use an --agent whose definition names a model")
        if own_program and not env.get("OPENAI_API_KEY"):
            return ("pi reads its API key from OPENAI_API_KEY, which is not set: set it (any "
                    "value for a local server that checks none), then spawn again")
        return None

    def parser(self, req: CliRequest | None = None) -> PiParser:
        return PiParser()


def models(req: CliRequest) -> dict[str, Any]:
    """agent/models.json: one OpenAI-compatible provider whose key pi reads
    from the environment variable it names."""
    base = req.env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    return {"providers": {PROVIDER: {
        "baseUrl": base, "api": "openai-completions", "apiKey": "OPENAI_API_KEY",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": req.model}] if req.model else []}}}


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


class PiParser(EventParser):
    """`pi --mode json` events -> trail records."""

    event_types = frozenset({"session", "agent_start", "agent_end", "turn_start", "turn_end",
                             "message_start", "message_update", "message_end",
                             "tool_execution_start", "tool_execution_update",
                             "tool_execution_end", "queue_update", "compaction_start",
                             "compaction_end", "auto_retry_start", "auto_retry_end"})

    def __init__(self) -> None:
        self.terminal = False
        self.session_id: str | None = None
        self.errors: list[str] = []
        self._report: str | None = None

    def feed(self, event: Any) -> list[Record]:
        if not isinstance(event, dict):
            return [("diagnostic", _diag("stream", "event", f"not an event object: "
                                         f"{str(event)[:200]}"))]
        kind = event.get("type")
        if kind == "session" and isinstance(event.get("id"), str):
            self.session_id = self.session_id or event["id"]
        elif kind == "message_end":
            msg = event.get("message")
            if isinstance(msg, dict) and msg.get("role") == "assistant":
                return self._assistant(msg)
        elif kind == "tool_execution_end":
            return [("tool_result", {"call_id": str(event.get("toolCallId") or ""),
                                     "ok": not event.get("isError"),
                                     "content": _text(event.get("result"))})]
        elif kind == "auto_retry_start":
            return [("diagnostic", _diag("backend", "retry", f"pi retries "
                                         f"({event.get('attempt')}/{event.get('maxAttempts')}): "
                                         f"{event.get('errorMessage')}"))]
        elif kind == "agent_end":
            self.terminal = True
        return []

    def _assistant(self, msg: dict[str, Any]) -> list[Record]:
        out: list[Record] = []
        texts = []
        for block in msg.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "thinking" and block.get("thinking"):
                out.append(("thinking", {"delta": block["thinking"]}))
            elif block.get("type") == "text" and block.get("text"):
                texts.append(block["text"])
                out.append(("text", {"delta": block["text"]}))
            elif block.get("type") == "toolCall":
                out.append(("tool_call", {"call_id": str(block.get("id") or ""),
                                          "name": block.get("name"),
                                          "arguments": block.get("arguments") or {}}))
        u: dict[str, Any] = msg["usage"] if isinstance(msg.get("usage"), dict) else {}
        # every part apart (pi-ai's output holds the reasoning already)
        usage = counted.parts(msg.get("model") or "", u.get("input"), u.get("output"),
                              cache_read=u.get("cacheRead"), cache_write=u.get("cacheWrite"))
        if usage["input_tokens"] or usage["output_tokens"]:
            out.append(("usage", usage))
        if msg.get("stopReason") in ("error", "aborted"):
            self.errors.append(str(msg.get("errorMessage") or f"pi stopped: {msg['stopReason']}"))
        else:
            self._report = "\n".join(texts).strip() or None
        return out

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        tail = stderr_tail.strip()[-1500:]
        if self.errors:
            # the same error said again (its own retries' last answer, the turn's end): once
            return Outcome(Status.FAILED, None, "; ".join(dict.fromkeys(self.errors))[:2000])
        if not self.terminal:
            why = f"pi exited (exit code {exit_code}) without finishing its turn"
            return Outcome(Status.FAILED, None, f"{why}: {tail}" if tail else why)
        if exit_code:
            why = f"pi failed (exit code {exit_code})"
            return Outcome(Status.FAILED, None, f"{why}: {tail}" if tail else why, self._report)
        return Outcome(Status.COMPLETED, report=self._report)


def _text(result: Any) -> str:
    if isinstance(result, dict):
        parts = [b.get("text") for b in result.get("content") or [] if isinstance(b, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return "" if result is None else str(result)
