"""Claude Code's `--output-format stream-json --verbose` events → trail
records (docs/explanation/rules.md#agent-clis). Imports only the standard library and
`zapcli.backends.clis.base`.

Events (2.1.328): `system/init` (session_id, model, claude_code_version,
mcp_servers) → attributes, no record (the runner writes `start`); `assistant`
(one event per content block, `parent_tool_use_id` set inside a nested
agent) → text / thinking / tool_call; `user` tool_result blocks → tool_result
(paired by the tool_use id); `system/permission_denied` and the result's
`permission_denials` → one diagnostic per denied call; `system/api_retry` →
diagnostic (a second retry after HTTP 401/403 is fatal:
terminal, and the outcome is failed, since claude would retry a rejected key
for minutes); `system/task_started` / `task_notification` / `task_updated` /
`background_tasks_changed` → the open background tasks (C18); `result` →
usage and the report; `system/session_state_changed` idle → terminal;
`rate_limit_event` rejected, then a result with `api_error`
`usage_limit_reached` → the account's usage limit and its reset (C42).
Each call's usage as its `assistant` events say it (input and cache exact,
output so far) is `unreported()` until its turn's result: what the budget
counts meanwhile (C41).

Usage: the assistant events carry the usage of message_start (output tokens
not final), so usage is taken from each `result` only: one record per model
per result, from `model_usage_since_last_result` (2.1.328: the delta since the
previous result, nested agents included), else the cumulative `modelUsage`
minus what was recorded, else the result's `usage` (with the growth of
`total_cost_usd`), counted in zapcli's terms (`zapcli.budget.usage.anthropic`:
input_tokens include the cache's reads and writes).

End of work: `claude -p` may print several results (a background task's
notification starts another turn after the first result). When the stream
carries session state events, `terminal` turns True at state `idle` after a
result (Claude Code's authoritative turn-over signal); without them, at a
result with no background task open. The report is the last result's text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from zapcli import limitwords
from zapcli.backends.clis.base import EventParser, Record
from zapcli.budget import usage
from zapcli.trail.model import Outcome, Status

CEILING_MARKERS = ("Background tasks still running", "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS")
AUTH_STATUSES = (401, 403)
_TASK_DONE = {"completed", "failed", "killed", "stopped", "cancelled", "error"}


def _diag(dimension: str, name: str, message: str) -> Record:
    return ("diagnostic", {"dimension": dimension, "name": name, "message": message})


def content_text(content: Any) -> str:
    """A tool_result's content as text: a string, or text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                parts.append(block.get("text") if block.get("type") == "text"
                             else f"[{block.get('type', 'block')}]")
        return "\n".join(p for p in parts if isinstance(p, str))
    return "" if content is None else json.dumps(content)


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) else 0


def _usage_record(model: str, mu: dict[str, Any]) -> Record:
    """A usage record from one modelUsage entry (camelCase keys, Anthropic's
    shape: the cache's reads and writes beside the input)."""
    fields = usage.anthropic(model, mu.get("inputTokens"), mu.get("outputTokens"),
                             mu.get("cacheReadInputTokens"), mu.get("cacheCreationInputTokens"))
    if isinstance(mu.get("costUSD"), (int, float)):
        fields["cost_usd"] = round(float(mu["costUSD"]), 8)
    return ("usage", fields)


class ClaudeEventParser(EventParser):
    """One per run; see the module docstring for the mapping. A CLI that
    prints the same stream (qwen) derives from it: `cli` names it in
    messages, `version_key` is where its init event says its version."""

    cli = "claude"
    version_key = "claude_code_version"

    # 2.1.328's stream-json kinds: read, or knowingly passed over
    event_types = frozenset({"system", "assistant", "user", "result", "stream_event",
                             "rate_limit_event", "tool_progress", "tool_use_summary",
                             "keep_alive", "auth_status", "prompt_suggestion",
                             "control_request", "control_response"})

    def __init__(self) -> None:
        self.terminal = False
        self.session_id: str | None = None
        self.version: str | None = None
        self.model: str | None = None
        self.structured_output: Any = None
        self.open_tasks: dict[str, str] = {}  # task_id -> description
        self.results = 0
        self.last_result: dict[str, Any] | None = None
        self.fatal: str | None = None  # an error claude would only retry in vain
        self._state_events = False
        self._denied: set[str] = set()
        self._model_totals: dict[str, dict[str, float]] = {}
        self._cost = 0.0
        self._turn_calls: dict[str, dict[str, Any]] = {}  # message id -> usage said (`_said`)
        self._rejected: dict[str, Any] | None = None  # a rate_limit_event that said `rejected`
        self.call_began = False  # a message_start was said since the sink last checked

    def feed(self, event: Any) -> list[Record]:
        if not isinstance(event, dict):
            return [_diag("backend", "event", f"not an event object: {str(event)[:200]}")]
        if self.session_id is None and isinstance(event.get("session_id"), str):
            self.session_id = event["session_id"]
        kind = event.get("type")
        if kind == "assistant":
            return self._assistant(event)
        if kind == "user":
            return self._user(event)
        if kind == "system":
            return self._system(event)
        if kind == "result":
            return self._result(event)
        if kind == "stream_event":  # partial messages (a budgeted run): a call said as it starts
            inner = event.get("event")
            if isinstance(inner, dict) and inner.get("type") == "message_start" \
                    and isinstance(inner.get("message"), dict):
                self._said(inner["message"])
                self.call_began = True
            return []
        if kind == "rate_limit_event":
            info = event.get("rate_limit_info")
            if isinstance(info, dict) and info.get("status") == "rejected":
                self._rejected = info
        return []

    # -- messages ---------------------------------------------------------

    def _assistant(self, event: dict[str, Any]) -> list[Record]:
        if event.get("error") or event.get("is_api_error_message"):
            msg = content_text((event.get("message") or {}).get("content"))
            return [_diag("backend", "api_error", msg or str(event.get("error")))]
        self._said(event.get("message") or {})
        parent = event.get("parent_tool_use_id")
        extra = {"parent_call_id": parent} if parent else {}
        out: list[Record] = []
        for block in (event.get("message") or {}).get("content") or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                out.append(("text", {"delta": block["text"], **extra}))
            elif kind == "thinking" and block.get("thinking"):
                out.append(("thinking", {"delta": block["thinking"], **extra}))
            elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
                out.append(("tool_call", {"call_id": block.get("id"), "name": block.get("name"),
                                          "arguments": block.get("input") or {}, **extra}))
        return out

    def _said(self, message: dict[str, Any]) -> None:
        """A call of this turn, as its message says it (one event per content
        block, each with the call's usage as it started: the input and the
        cache exact, the output so far): counted until the turn's result."""
        u, mid = message.get("usage"), message.get("id")
        if isinstance(u, dict) and isinstance(mid, str):
            seen = self._turn_calls.get(mid, {}).get("output_tokens", 0)
            said = usage.anthropic(message.get("model") or self.model, u.get("input_tokens"),
                                   u.get("output_tokens"), u.get("cache_read_input_tokens"),
                                   u.get("cache_creation_input_tokens"))
            said["output_tokens"] = max(said["output_tokens"], seen)
            self._turn_calls[mid] = said

    def unreported(self) -> list[dict[str, Any]]:
        return list(self._turn_calls.values())

    def _user(self, event: dict[str, Any]) -> list[Record]:
        parent = event.get("parent_tool_use_id")
        extra = {"parent_call_id": parent} if parent else {}
        content = (event.get("message") or {}).get("content")
        out: list[Record] = []
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(("tool_result", {"call_id": block.get("tool_use_id"),
                                            "ok": not block.get("is_error"),
                                            "content": content_text(block.get("content")),
                                            **extra}))
        return out

    # -- system events ----------------------------------------------------

    def _system(self, event: dict[str, Any]) -> list[Record]:
        sub = event.get("subtype")
        if sub == "init":
            return self._init(event)
        if sub == "permission_denied":
            return self._denied_record(event.get("tool_use_id"), event.get("tool_name"),
                                       event.get("message") or event.get("decision_reason"))
        if sub == "api_retry":
            return self._retry(event)
        if sub == "session_state_changed":
            self._state_events = True
            if event.get("state") == "idle" and self.results:
                self.terminal = True
            return []
        return self._task_event(sub, event)

    def _retry(self, event: dict[str, Any]) -> list[Record]:
        status = event.get("error_status")
        what = f"status {status}, {event.get('error')}"
        if status in AUTH_STATUSES and _int(event.get("attempt")) >= 2:
            # claude retries a rejected key ~10 times over minutes: fatal now
            self.fatal = f"the API rejected the credentials ({what})"
            self.terminal = True
        return [_diag("backend", "api_retry", f"API retry {event.get('attempt')}/"
                      f"{event.get('max_retries')}: {what}")]

    def _init(self, event: dict[str, Any]) -> list[Record]:
        if self.version is not None:  # a later turn's init repeats the first
            return []
        self.version = event.get(self.version_key)
        self.model = event.get("model")
        return [_diag("mcp", str(s.get("name")), f"MCP server {s.get('name')} is "
                      f"{s.get('status')}: {s.get('error') or 'no tools from it'}")
                for s in event.get("mcp_servers") or []
                if isinstance(s, dict) and s.get("status") not in ("connected", None)]

    def _task_event(self, sub: Any, event: dict[str, Any]) -> list[Record]:
        tid = event.get("task_id")
        if sub == "task_started" and tid:
            self.open_tasks[str(tid)] = str(event.get("description") or event.get("task_type"))
        elif sub == "task_updated" and tid:
            if ((event.get("patch") or {}).get("status")) in _TASK_DONE:
                self.open_tasks.pop(str(tid), None)
        elif sub == "background_tasks_changed" and isinstance(event.get("tasks"), list):
            self.open_tasks = {str(t.get("task_id")): str(t.get("description") or
                                                          t.get("task_type"))
                               for t in event["tasks"] if isinstance(t, dict)}
        elif sub == "task_notification" and tid:
            desc = self.open_tasks.pop(str(tid), None) or event.get("description") or tid
            status = event.get("status")
            if status not in (None, "completed"):
                return [_diag("backend", "background_task",
                              f"background task {tid} ({desc}) ended {status}: "
                              f"{event.get('summary') or ''}".rstrip(": "))]
        return []

    def _denied_record(self, call_id: Any, tool: Any, message: Any) -> list[Record]:
        if call_id in self._denied:
            return []
        self._denied.add(call_id)
        return [_diag("approval", str(tool), f"{self.cli} denied {tool} (call {call_id}): "
                      f"{message or 'permission denied'}")]

    # -- result -------------------------------------------------------------

    def _result(self, event: dict[str, Any]) -> list[Record]:
        self._turn_calls.clear()  # reported now, in full
        self._limited(event)
        self.results += 1
        self.last_result = event
        if "structured_output" in event:
            self.structured_output = event["structured_output"]
        out: list[Record] = []
        for d in event.get("permission_denials") or []:
            if isinstance(d, dict):
                out += self._denied_record(d.get("tool_use_id"), d.get("tool_name"),
                                           "denied (reported in the result)")
        out += self._usage(event)
        if not self._state_events and not self.open_tasks:
            self.terminal = True
        return out

    def _limited(self, event: dict[str, Any]) -> None:
        """The account's usage limit ended the turn (C42): its reset, from the
        rejected `rate_limit_event` (a time stamp), its zone from the words
        ("You've hit your 5-hour limit · resets 7:53pm (Europe/Warsaw)")."""
        params = event.get("api_error_params")
        info = params.get("rate_limit_info") if isinstance(params, dict) else None
        info = info if isinstance(info, dict) else self._rejected
        if event.get("api_error") != "usage_limit_reached" and not (event.get("is_error") and info):
            return
        result = event.get("result")
        text = result if isinstance(result, str) else ""
        at = (info or {}).get("resetsAt")
        zone = re.search(r"\(([A-Za-z_]+/[A-Za-z_+/-]+|UTC)\)", text)
        self.usage_limit = limitwords.UsageLimit(
            " ".join(text.split())[:600] or "usage limit reached",
            float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None,
            zone.group(1) if zone else None)

    def _usage(self, event: dict[str, Any]) -> list[Record]:
        cost = event.get("total_cost_usd")
        since = event.get("model_usage_since_last_result")
        total = event.get("modelUsage")
        out: list[Record] = []
        if isinstance(since, dict):
            out = [_usage_record(m, mu) for m, mu in since.items() if isinstance(mu, dict)]
            for m, mu in since.items():  # keep cumulative totals in step
                if isinstance(mu, dict):
                    acc = self._model_totals.setdefault(m, {})
                    for k, v in mu.items():
                        if isinstance(v, (int, float)):
                            acc[k] = acc.get(k, 0) + v
        elif isinstance(total, dict):
            for m, mu in total.items():
                if not isinstance(mu, dict):
                    continue
                prev = self._model_totals.get(m, {})
                delta = {k: v - prev.get(k, 0) for k, v in mu.items() if isinstance(v, (int, float))}
                self._model_totals[m] = {k: v for k, v in mu.items() if isinstance(v, (int, float))}
                if any(delta.get(k) for k in ("inputTokens", "outputTokens",
                                              "cacheReadInputTokens")):
                    out.append(_usage_record(m, delta))
        elif isinstance(event.get("usage"), dict):
            u = event["usage"]
            mu = {"inputTokens": u.get("input_tokens"), "outputTokens": u.get("output_tokens"),
                  "cacheReadInputTokens": u.get("cache_read_input_tokens"),
                  "cacheCreationInputTokens": u.get("cache_creation_input_tokens")}
            if isinstance(cost, (int, float)):
                mu["costUSD"] = cost - self._cost
            out = [_usage_record(self.model or self.cli, mu)]
        if isinstance(cost, (int, float)):
            self._cost = float(cost)
        return [r for r in out if r[1]["input_tokens"] or r[1]["output_tokens"]]

    # -- outcome -------------------------------------------------------------

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        lines = [ln for ln in stderr_tail.splitlines() if ln.strip()]
        ceiling = next((ln for ln in lines if any(m in ln for m in CEILING_MARKERS)), None)
        res = self.last_result
        if self.fatal:
            return Outcome(Status.FAILED, None, f"{self.cli} stopped: {self.fatal}")
        if res is None:
            tail = "\n".join(lines[-10:]) or "(stderr empty)"
            return Outcome(Status.FAILED, None, f"{self.cli} exited (code {exit_code}) without a result "
                                        f"event: {tail}")
        text = res.get("result") if isinstance(res.get("result"), str) else None
        if res.get("is_error") or str(res.get("subtype", "")).startswith("error"):
            errors: list[Any] = res["errors"] if isinstance(res.get("errors"), list) else []
            error = res["error"] if isinstance(res.get("error"), dict) else {}
            why = (text or "; ".join(str(e) for e in errors) or error.get("message")
                   or str(res.get("subtype")))
            return Outcome(Status.FAILED, None, f"{self.cli} reported an error: {why}")
        if ceiling is not None:
            return Outcome(Status.FAILED, None, "claude's print-mode background wait ceiling stopped "
                                        f"its background work: {ceiling.strip()}", text)
        if self.open_tasks:
            names = ", ".join(f"{k}: {v}" for k, v in self.open_tasks.items())
            n = len(self.open_tasks)
            return Outcome(Status.FAILED, None, f"{self.cli} finished with {n} background task"
                                        f"{'s' if n > 1 else ''} still open ({names})", text)
        return Outcome(Status.COMPLETED, report=text)
