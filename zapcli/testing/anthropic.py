"""The Anthropic Messages protocol of the scripted server, enough for the real
Claude Code CLI to run offline. Imports only the standard library and
`zapcli.testing.script` / `.server`.

Routes: `POST /v1/messages` (streaming SSE with named events, or one JSON
message), `POST /v1/messages/count_tokens`, `GET /v1/models[/ID]`, and
`HEAD|GET /api/hello` (Claude Code's connectivity probe). A query string
(Claude Code sends `?beta=true`) is ignored. Everything else is a 404 in
Anthropic's error shape `{"type": "error", "error": {"type", "message"}}`.

Conversation key: (system text, first user message text), where the system
text leaves out Claude Code's `x-anthropic-billing-header` block and the user
text leaves out `<system-reminder>` blocks (Claude Code puts attribution,
context and date reminders there and may change them between turns). A rule
matching the task text therefore matches the main conversation, and every
turn of it advances the same cursor; a nested agent (Claude Code's Task /
Agent tool) is its own conversation, keyed by its own prompt.

Side requests: Claude Code also asks the model for things no script is about
(session titles, summaries, quota and model checks). A request that matches
no rule is answered with `SIDE_TEXT` (a short text turn, never an error) and
counted in `ScriptedServer.side_requests`; it consumes no scripted turn. A
rule that should also serve such requests just has to match them.

Turn rendering (see `zapcli.testing.script`): `reasoning` → a thinking block,
`text` → a text block, `tool_calls` → tool_use blocks (arguments streamed as
input_json_delta), `usage` {prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens}
→ input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens
(Anthropic's shape: the cache's tokens beside the input, not in it); `finish_reason` →
stop_reason (default "tool_use" with calls, else "end_turn"). Faults:
`http_error` → that status with the error JSON (429 and 529 carry
`retry-after` and `retry-after-ms`, or `Retry-After` alone with `retry_after`), `error_200` → `event: error` after the
stream began, `raw` → verbatim (objects as `event: <type>` + `data: <json>`),
`close: "abort"` → the stream cut without its end.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from zapcli.testing.script import estimate_tokens, pieces
from zapcli.testing.server import Handler, Protocol

SIDE_TEXT = "OK"
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def error_body(status: int, message: str, etype: str | None = None) -> dict[str, Any]:
    return {"type": "error", "error": {"type": etype or _ERROR_TYPES.get(status, "api_error"),
                                       "message": message}, "request_id": "req_scripted"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return _REMINDER.sub("", content)
    if isinstance(content, list):
        return "".join(_REMINDER.sub("", p.get("text") or "") for p in content
                       if isinstance(p, dict) and p.get("type", "text") == "text")
    return ""


def conversation_key(body: dict[str, Any]) -> tuple[str, str]:
    """(system text, first user message text) of a Messages request, without
    the billing header and the system reminders (see the module docstring)."""
    system = body.get("system")
    if isinstance(system, list):
        system = [b for b in system if not (isinstance(b, dict) and str(b.get("text", ""))
                                            .startswith("x-anthropic-billing-header"))]
    user = next((m.get("content") for m in body.get("messages") or []
                 if isinstance(m, dict) and m.get("role") == "user"), "")
    return _text(system).strip(), _text(user).strip()


def _usage(turn: dict[str, Any], body: dict[str, Any], out_chars: int) -> dict[str, int]:
    u = dict(turn.get("usage") or {})
    return {"input_tokens": int(u.get("prompt_tokens", estimate_tokens(body.get("messages", [])))),
            "output_tokens": int(u.get("completion_tokens", max(1, out_chars // 4))),
            "cache_creation_input_tokens": int(u.get("cache_write_tokens", 0)),
            "cache_read_input_tokens": int(u.get("cached_tokens", 0))}


def _blocks(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of a turn, tool_use input as a JSON string `_json`."""
    out: list[dict[str, Any]] = []
    if turn.get("reasoning"):
        out.append({"type": "thinking", "thinking": turn["reasoning"],
                    "signature": "c2NyaXB0ZWQ="})
    if turn.get("text"):
        out.append({"type": "text", "text": turn["text"]})
    for i, c in enumerate(turn.get("tool_calls") or []):
        args = c.get("arguments", {})
        raw = args if isinstance(args, str) else json.dumps(args)
        out.append({"type": "tool_use", "id": c.get("id") or f"toolu_{turn.get('_id', 'x')}_{i}",
                    "name": c["name"], "_json": raw})
    return out


def _message(turn: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    blocks = _blocks(turn)
    stop = turn.get("finish_reason") or ("tool_use" if turn.get("tool_calls") else "end_turn")
    chars = sum(len(b.get("text") or b.get("thinking") or b.get("_json") or "") for b in blocks)
    return {"id": f"msg_{turn.get('_id', 'x')}", "type": "message", "role": "assistant",
            "model": body.get("model") or "scripted", "content": blocks, "stop_reason": stop,
            "stop_sequence": None, "usage": _usage(turn, body, chars)}


def _final(block: dict[str, Any]) -> dict[str, Any]:
    """A block as a non-streamed message carries it (tool input parsed)."""
    if block["type"] != "tool_use":
        return block
    try:
        data = json.loads(block["_json"])
    except ValueError:
        data = {"_invalid_json": block["_json"]}
    return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": data}


def sse(event: dict[str, Any]) -> str:
    return f"event: {event.get('type', 'message')}\ndata: {json.dumps(event)}\n\n"


def _block_events(i: int, b: dict[str, Any]) -> list[dict[str, Any]]:
    kind = b["type"]
    start: dict[str, Any]
    if kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(b["thinking"])]
        deltas.append({"type": "signature_delta", "signature": b["signature"]})
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces(b["text"])]
    else:
        start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(b["_json"])]
    return ([{"type": "content_block_start", "index": i, "content_block": start}]
            + [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
            + [{"type": "content_block_stop", "index": i}])


def stream_events(turn: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """The SSE events of a turn, message_start to message_stop."""
    msg = _message(turn, body)
    usage = msg["usage"]
    start = dict(msg, content=[], stop_reason=None,
                 usage=dict(usage, output_tokens=min(1, usage["output_tokens"])))
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, b in enumerate(msg["content"]):
        events += _block_events(i, b)
    events.append({"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"],
                                                      "stop_sequence": None}, "usage": usage})
    events.append({"type": "message_stop"})
    return events


class AnthropicProtocol(Protocol):
    name = "anthropic"
    base_path = ""  # ANTHROPIC_BASE_URL is the root: the SDK appends /v1/messages
    url_variable = "ANTHROPIC_BASE_URL"

    def head(self, h: Handler, path: str) -> None:
        h.send_response(200 if path.split("?")[0].rstrip("/") == "/api/hello" else 404)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def get(self, h: Handler, path: str) -> None:
        path = path.split("?")[0].rstrip("/")
        if path == "/api/hello":
            return h.send_json(200, {"message": "hello"})
        ids = self.server.models or ["scripted"]
        models = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                  for m in ids]
        if path == "/v1/models":
            return h.send_json(200, {"data": models, "has_more": False,
                                     "first_id": ids[0], "last_id": ids[-1]})
        if path.startswith("/v1/models/"):
            mid = path.rsplit("/", 1)[1]
            if self.server.models is None or mid in self.server.models:
                return h.send_json(200, dict(models[0], id=mid, display_name=mid))
            return h.send_json(404, error_body(404, f"model: {mid}"))
        h.send_json(404, error_body(404, f"Invalid URL (GET {path})"))

    def post(self, h: Handler, path: str, body: dict[str, Any]) -> None:
        path = path.split("?")[0].rstrip("/")
        if path == "/v1/messages/count_tokens":
            return h.send_json(200, {"input_tokens": estimate_tokens(
                [body.get("system"), body.get("messages"), body.get("tools")])})
        if path != "/v1/messages":
            return h.send_json(404, error_body(404, f"Invalid URL (POST {path})"))
        if body.get("_invalid"):
            return h.send_json(400, error_body(400, "There was an error parsing the body."))
        srv = self.server
        srv.record(body)
        key = h.headers.get("x-api-key") or (h.headers.get("Authorization") or "")[7:]
        if srv.api_key is not None and key != srv.api_key:
            return h.send_json(401, error_body(401, "invalid x-api-key"))
        model = str(body.get("model") or "")
        if srv.models is not None and model not in srv.models:
            return h.send_json(404, error_body(404, f"model: {model}"))
        turn, _ = srv.conversations.next_turn(*conversation_key(body))
        if turn is None:
            srv.count_side_request()
            turn = {"text": SIDE_TEXT, "_id": "side"}
        srv.conversations.pause(turn)
        turn = srv.fill(turn)  # after its hold: a variable the test set meanwhile is in
        self._answer(h, turn, body)

    def _answer(self, h: Handler, turn: dict[str, Any], body: dict[str, Any]) -> None:
        if err := turn.get("http_error"):
            status = int(err.get("status", 500))
            headers = {}
            if status in (429, 529) and err.get("retry_after") is not None:
                headers = {"retry-after": str(err["retry_after"])}
            elif status in (429, 529):
                ms = int(err.get("retry_after_ms", 10))
                headers = {"retry-after-ms": str(ms), "retry-after": str(math.ceil(ms / 1000))}
            headers.update(err.get("headers") or {})
            if err.get("body") is not None:  # the provider's own body, verbatim
                return h.send_json(status, err["body"], headers)
            return h.send_json(status, error_body(status, err.get("message", f"scripted HTTP {status}"),
                                                  err.get("code")), headers)
        if err := turn.get("error_200"):
            error = error_body(500, err["message"], err.get("type") or "api_error")
            if not body.get("stream"):
                return h.send_json(200, error)
            start = stream_events({"_id": turn.get("_id")}, body)[0]
            return h.send_stream([sse(start), sse(error)])
        if "raw" in turn:
            return h.send_stream([x if isinstance(x, str) else sse(x) for x in turn["raw"]],
                                 turn.get("close", "clean"))
        if body.get("stream"):
            events: list[Any] = [sse(e) for e in stream_events(turn, body)]
            if turn.get("generate_s"):  # message_start now, the rest as a model generates it
                events.insert(1, float(turn["generate_s"]))
            return h.send_stream(events)
        msg = _message(turn, body)
        h.send_json(200, dict(msg, content=[_final(b) for b in msg["content"]]))
