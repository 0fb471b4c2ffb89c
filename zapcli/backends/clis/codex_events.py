"""`codex exec --json` events (0.169) → trail records, and the outcome.
Imports only the standard library and `zapcli.backends.clis.base`.

Events: `thread.started` {thread_id} (the session id, for resume),
`turn.started`, `item.started|updated|completed` {item: {id, type, ...}},
`turn.completed` {usage}, `turn.failed` {error: {message}}, `error`
{message}. Items: agent_message {text}, reasoning {text}, command_execution
{command, aggregated_output, exit_code, status}, file_change {changes,
status}, mcp_tool_call {server, tool, arguments, result, error, status},
web_search {query}, todo_list {items}, collab_tool_call, error {message}.
Item ids (`item_N`) are codex's own; they pair a call with its result.

Quirks handled here:
- usage is the thread's running total (a resumed thread's first
  turn.completed includes earlier runs): each usage record is the increase
  over what was already counted, so tokens are counted once;
- a broken model stream is retried (an `error` "Reconnecting... n/5" event)
  and codex re-emits the attempt's agent_message each time: agent text is
  held until an event other than `error` confirms its attempt and set aside
  when an `error` ends the attempt (a retry repeats it); on `turn.failed`
  the last attempt's text is released once, so text and report are never
  doubled (text still held when the stream ends without a terminal event
  only becomes the report);
- commands codex refused (sandbox escalation, patches outside the sandbox)
  never appear in the stream; MCP calls refused by the approval policy do,
  as a failed mcp_tool_call (a diagnostic here);
- a command still running when the turn ends (codex stops it at exit) gets
  a failed tool_result, and the run is not `completed`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from zapcli.backends.clis.base import EventParser, Record
from zapcli.trail.model import Outcome, Status

_CALL_TYPES = {"command_execution", "file_change", "mcp_tool_call", "web_search",
               "collab_tool_call"}
_DENIED = ("approval policy is never", "rejected by user", "declined")


def error_message(message: Any) -> str:
    """codex passes an HTTP error body through as its message: show the inner
    `error.message` of a JSON body, else the message as it is."""
    text = str(message or "")
    if text.startswith("{"):
        try:
            inner = json.loads(text).get("error")
        except (ValueError, AttributeError):
            return text
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return text


def _call(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of a call item."""
    kind = item.get("type")
    if kind == "command_execution":
        return "shell", {"command": item.get("command", "")}
    if kind == "file_change":
        return "apply_patch", {"changes": item.get("changes") or []}
    if kind == "mcp_tool_call":
        args = item.get("arguments")
        return (f"mcp__{item.get('server')}__{item.get('tool')}",
                args if isinstance(args, dict) else {"arguments": args})
    if kind == "web_search":
        return "web_search", {"query": item.get("query", "")}
    return f"agent_{item.get('tool', 'call')}", {
        "prompt": item.get("prompt"), "receiver_thread_ids": item.get("receiver_thread_ids")}


def _result(item: dict[str, Any]) -> tuple[bool, str]:
    """(ok, content) of a completed call item."""
    kind, status = item.get("type"), item.get("status", "completed")
    if kind == "command_execution":
        out, code = str(item.get("aggregated_output") or ""), item.get("exit_code")
        ok = status == "completed" and code == 0
        return ok, out if code in (0, None) else f"{out}\n[exit code {code}]".lstrip("\n")
    if kind == "file_change":
        lines = [f"{c.get('kind')} {c.get('path')}" for c in item.get("changes") or []]
        return status == "completed", f"{status}: " + "; ".join(lines)
    if kind == "mcp_tool_call":
        if item.get("error"):
            return False, str(item["error"].get("message", ""))
        res = item.get("result") or {}
        parts = [c.get("text", "") if isinstance(c, dict) and c.get("type") == "text"
                 else json.dumps(c) for c in res.get("content") or []]
        return status == "completed", "\n".join(parts)
    if kind == "web_search":
        return True, json.dumps(item.get("action") or item.get("query", ""))
    return status == "completed", json.dumps(item.get("agents_states") or {})


class CodexParser(EventParser):
    event_types = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed",
                             "item.started", "item.updated", "item.completed", "error",
                             "request_user_input"})

    def __init__(self, model: str | None = None, already: Mapping[str, int] | None = None):
        self.model = model or ""
        self.terminal = False
        self.session_id: str | None = None
        self._counted = {k: int((already or {}).get(k, 0))
                         for k in ("input_tokens", "output_tokens", "cached_tokens")}
        self._held: list[str] = []  # agent text of the current attempt, not yet confirmed
        self._retried: list[str] = []  # held text of the attempt an `error` ended
        self._last_text: str | None = None
        self._open: dict[str, tuple[float, str]] = {}  # item id -> (start, summary)
        self._todo_n = 0
        self._failed: str | None = None
        self._completed = False
        self._last_error: str | None = None
        self._left_running: list[str] = []

    def feed(self, event: Any) -> list[Record]:
        if not isinstance(event, dict):
            return []
        kind = event.get("type")
        if kind == "error":
            return self._on_error(error_message(event.get("message")))
        if kind == "turn.failed" and not self._held:
            self._held = self._retried  # the last attempt's text, once
        out = self._release()
        if kind == "thread.started":
            self.session_id = str(event.get("thread_id") or "") or self.session_id
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                out += self._on_item(kind.split(".")[1], item)
        elif kind == "turn.completed":
            out += self._on_turn_completed(event)
        elif kind == "turn.failed":
            err = event.get("error") or {}
            self._failed = error_message(err.get("message") if isinstance(err, dict) else err) \
                or self._last_error or "codex: turn failed"
            self.terminal = True
        elif kind == "request_user_input":
            out.append(("diagnostic", {"dimension": "approval", "name": "request_user_input",
                                       "message": "codex asked the user a question; in exec "
                                       "mode nobody answers"}))
        return out

    def _on_error(self, message: str) -> list[Record]:
        self._last_error = message
        if self._held:  # the attempt is retried (its text comes again) or the turn fails
            self._retried, self._held = self._held, []
        return [("diagnostic", {"dimension": "model", "name": "codex", "message": message})]

    def _release(self) -> list[Record]:
        out: list[Record] = [("text", {"delta": t}) for t in self._held]
        if self._held:
            self._last_text = self._held[-1]
        self._held, self._retried = [], []
        return out

    def _on_item(self, phase: str, item: dict[str, Any]) -> list[Record]:
        kind, iid = item.get("type"), str(item.get("id", ""))
        if kind == "agent_message":
            if phase == "completed":
                self._held.append(str(item.get("text") or ""))
            return []
        if kind == "reasoning":
            return [("thinking", {"delta": str(item["text"])})] \
                if phase == "completed" and item.get("text") else []
        if kind == "error":
            return [("diagnostic", {"dimension": "model", "name": "codex",
                                    "message": str(item.get("message", ""))})]
        if kind == "todo_list":
            return self._on_todo(phase, item)
        if kind not in _CALL_TYPES:
            return []
        out: list[Record] = []
        if iid not in self._open:
            name, args = _call(item)
            self._open[iid] = (time.monotonic(), str(args.get("command") or name)[:120])
            out.append(("tool_call", {"call_id": iid, "name": name, "arguments": args}))
        if phase != "completed":
            return out
        start, _ = self._open.pop(iid)
        ok, content = _result(item)
        out.append(("tool_result", {"call_id": iid, "ok": ok, "content": content,
                                    "duration_ms": int((time.monotonic() - start) * 1000)}))
        if not ok and any(d in content.lower() for d in _DENIED):
            out.append(("diagnostic", {"dimension": "approval", "name": _call(item)[0],
                                       "message": f"codex denied it: {content}"}))
        return out

    def _on_todo(self, phase: str, item: dict[str, Any]) -> list[Record]:
        if phase == "completed":
            return []
        self._todo_n += 1
        cid = f"{item.get('id', 'todo')}.{self._todo_n}"
        items = item.get("items") or []
        listing = "\n".join(("[x] " if i.get("completed") else "[ ] ") + str(i.get("text", ""))
                            for i in items if isinstance(i, dict))
        return [("tool_call", {"call_id": cid, "name": "todo", "arguments": {"items": items}}),
                ("tool_result", {"call_id": cid, "ok": True, "content": listing, "duration_ms": 0})]

    def _on_turn_completed(self, event: dict[str, Any]) -> list[Record]:
        out: list[Record] = []
        for iid, (start, summary) in self._open.items():
            self._left_running.append(summary)
            out.append(("tool_result", {"call_id": iid, "ok": False, "duration_ms": int(
                (time.monotonic() - start) * 1000), "content": "still running when codex ended "
                "its turn (codex stops it when it exits)"}))
        self._open.clear()
        u = event.get("usage") or {}
        total = {"input_tokens": int(u.get("input_tokens") or 0),
                 "output_tokens": int(u.get("output_tokens") or 0),
                 "cached_tokens": int(u.get("cached_input_tokens") or 0)}
        delta = {k: max(0, v - self._counted[k]) for k, v in total.items()}
        self._counted = {k: max(v, self._counted[k]) for k, v in total.items()}
        if any(delta.values()):
            out.append(("usage", {"model": self.model, **delta}))
        self._completed = True
        self.terminal = True
        return out

    def finish(self, exit_code: int | None, stderr_tail: str) -> Outcome:
        pending = self._held or self._retried  # never confirmed: kept for the report only
        report = pending[-1] if pending else self._last_text
        if self._failed is not None:
            return Outcome(Status.FAILED, None, self._failed, report)
        if self._completed and self._left_running:
            n = len(self._left_running)
            return Outcome(Status.FAILED, None, f"codex ended its turn with {n} command"
                              f"{'s' if n > 1 else ''} still running: "
                              + "; ".join(self._left_running), report)
        if self._completed:
            return Outcome(Status.COMPLETED, report=report if report is not None else "")
        tail = " | ".join(ln for ln in stderr_tail.strip().splitlines()[-3:] if ln.strip())
        why = self._last_error or tail or "no output"
        return Outcome(Status.FAILED, None, f"codex exited (code {exit_code}) before finishing its "
                          f"turn: {why}", report)
