"""The OpenAI Chat Completions protocol of the scripted server: SSE streaming,
`/v1/chat/completions`, `/v1/models`. Imports only the standard library and
`zapcli.testing.script` / `.server`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from zapcli.testing.script import estimate_tokens, pieces, text_of
from zapcli.testing.server import Handler, Protocol


def openai_error(h: Handler, status: int, message: str, code: str | None = None,
                 etype: str = "invalid_request_error", headers: dict[str, str] | None = None) -> None:
    """An error in OpenAI's shape (Chat Completions and Responses alike)."""
    h.send_json(status, {"error": {"message": message, "type": etype, "param": None,
                                   "code": code}}, headers)


_error = openai_error


def retry_headers(err: dict[str, Any]) -> dict[str, str]:
    """`retry_after` (seconds) → `Retry-After` alone; else `retry-after-ms`
    (`retry_after_ms`, default 10)."""
    if err.get("retry_after") is not None:
        return {"retry-after": str(err["retry_after"])}
    return {"retry-after-ms": str(err.get("retry_after_ms", 10))}


def scripted_http_error(h: Handler, err: dict[str, Any]) -> None:
    """A turn's `http_error`, as OpenAI sends it (both endpoints): 429 is a rate
    limit, 529 an overloaded server (as Anthropic says it; `type:
    overloaded_error` makes a 503 say so too), other 5xx a server error, a
    plain 4xx an invalid request (not retryable)."""
    status = int(err.get("status", 500))
    headers = {**retry_headers(err), **(err.get("headers") or {})}
    if err.get("body") is not None:  # the provider's own body, verbatim
        return h.send_json(status, err["body"], headers)
    etype = err.get("type") or ("rate_limit_error" if status == 429 else "overloaded_error"
                                if status == 529 else "server_error" if status >= 500
                                else "invalid_request_error")
    openai_error(h, status, err.get("message", f"scripted HTTP {status}"), err.get("code"),
                 etype, headers)


def openai_turn(srv: Any, h: Handler, body: dict[str, Any], key: tuple[str, ...],
                problem: str | None = None, users: tuple[str, ...] = (),
                opening: bool = False) -> dict[str, Any] | None:
    """What OpenAI's endpoints check before answering (the body recorded, a
    malformed request refused, the bearer key, a known model), then the
    conversation's next turn, filled and delayed. None when an error was sent."""
    srv.record(body)
    if problem:
        openai_error(h, 400, problem, "invalid_request_error")
        return None
    if srv.api_key is not None and h.headers.get("Authorization") != f"Bearer {srv.api_key}":
        openai_error(h, 401, "Incorrect API key provided.", "invalid_api_key")
        return None
    model = str(body.get("model") or "")
    if srv.models is not None and model not in srv.models:
        openai_error(h, 404, f"The model `{model}` does not exist or you do not have "
                            "access to it.", "model_not_found")
        return None
    turn, why = srv.conversations.next_turn(*key, users=users, opening=opening)
    if turn is None:
        openai_error(h, 400, why, "no_matching_rule")
        return None
    srv.conversations.pause(turn)
    turn = srv.fill(turn)  # after its hold: a variable the test set meanwhile is in
    return turn  # type: ignore[no-any-return]


def _users(body: dict[str, Any]) -> tuple[str, ...]:
    return tuple(text_of(m.get("content")) for m in body.get("messages") or []
                 if isinstance(m, dict) and m.get("role") == "user")


def _opening(body: dict[str, Any]) -> bool:
    """The request opens its conversation: no message of the model's in it."""
    return not any(isinstance(m, dict) and m.get("role") in ("assistant", "tool")
                   for m in body.get("messages") or [])


def conversation_key(body: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, first user message) of a Chat Completions request."""
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system = next((text_of(m.get("content")) for m in msgs if m.get("role") == "system"), "")
    user = next((text_of(m.get("content")) for m in msgs if m.get("role") == "user"), "")
    return system, user


def _usage(turn: dict[str, Any], body: dict[str, Any], out_chars: int) -> dict[str, Any] | None:
    if "usage" in turn and turn["usage"] is None:
        return None
    u = dict(turn.get("usage") or {})
    prompt = u.get("prompt_tokens", estimate_tokens(body.get("messages", [])))
    completion = u.get("completion_tokens", max(1, out_chars // 4))
    out = {"prompt_tokens": prompt, "completion_tokens": completion,
           "total_tokens": prompt + completion,
           "prompt_tokens_details": {"cached_tokens": u.get("cached_tokens", 0)}}
    if u.get("reasoning_tokens"):  # OpenAI's shape: a part of completion_tokens
        out["completion_tokens_details"] = {"reasoning_tokens": u["reasoning_tokens"]}
    return out


def _message(turn: dict[str, Any]) -> tuple[str, str, str, list[dict[str, Any]]]:
    """(text, reasoning, reasoning_field, tool_calls as OpenAI objects)."""
    text, reasoning = turn.get("text") or "", turn.get("reasoning") or ""
    field = turn.get("reasoning_field", "reasoning_content")
    if reasoning and field == "think_tags":
        text, reasoning = f"<think>{reasoning}</think>\n\n{text}", ""
    calls = []
    for i, c in enumerate(turn.get("tool_calls") or []):
        args = c.get("arguments", {})
        calls.append({"id": c.get("id") or f"call_{turn.get('_id', 'x')}_{i}", "type": "function",
                      "function": {"name": c["name"], "arguments": args if isinstance(args, str)
                                   else json.dumps(args)}})
    return text, reasoning, field, calls


def malformed_history(messages: Any) -> str | None:
    """What OpenAI answers with a 400 about a conversation's shape, if anything:
    an assistant message with `tool_calls` must be followed by one `tool`
    message per call id (before any other message), and a `tool` message
    must answer a call of the assistant message just before it."""
    if not isinstance(messages, list):
        return None
    pending: list[str] = []
    answerable: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role == "tool":
            call_id = m.get("tool_call_id")
            if call_id not in answerable:
                return (f"Invalid parameter: messages with role 'tool' must be a response to a "
                        f"preceeding message with 'tool_calls' (messages[{i}], tool_call_id "
                        f"{call_id!r}).")
            answerable.discard(call_id)
            pending = [c for c in pending if c != call_id]
            continue
        if pending:
            return (f"An assistant message with 'tool_calls' must be followed by tool messages "
                    f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
                    f"response messages: {', '.join(pending)} (before messages[{i}]).")
        calls = m.get("tool_calls") if role == "assistant" else None
        ids = [str(c.get("id")) for c in calls or [] if isinstance(c, dict)]
        pending, answerable = list(ids), set(ids)
    if pending:
        return (f"An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}.")
    return None


class ChatProtocol(Protocol):
    name = "chat"

    def get(self, h: Handler, path: str) -> None:
        if path.rstrip("/") != "/v1/models":
            return _error(h, 404, f"Invalid URL (GET {path})")
        ids = self.server.models or ["scripted"]
        h.send_json(200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "zapcli"} for m in ids]})

    def post(self, h: Handler, path: str, body: dict[str, Any]) -> None:
        if path.rstrip("/") != "/v1/chat/completions":
            return _error(h, 404, f"Invalid URL (POST {path})")
        if body.get("_invalid"):
            return _error(h, 400, "We could not parse the JSON body of your request.")
        turn = openai_turn(self.server, h, body, conversation_key(body),
                           malformed_history(body.get("messages")), users=_users(body),
                           opening=_opening(body))
        if turn is not None:
            self._answer(h, turn, body)

    def _answer(self, h: Handler, turn: dict[str, Any], body: dict[str, Any]) -> None:
        if err := turn.get("http_error"):
            return scripted_http_error(h, err)
        if err := turn.get("error_200"):
            error = {"message": err.get("message", "scripted error"), "type": err.get("type",
                     "server_error"), "code": err.get("code")}
            if not body.get("stream"):
                return h.send_json(200, {"error": error})
            return h.send_stream([{"error": error}])
        if "raw" in turn:
            return h.send_stream(turn["raw"], turn.get("close", "clean"))
        if body.get("stream"):
            opts = body.get("stream_options") or {}
            return h.send_stream(_chunks(turn, body, bool(opts.get("include_usage")))
                                 + ["data: [DONE]\n\n"])
        h.send_json(200, _completion(turn, body))


def _envelope(turn: dict[str, Any], body: dict[str, Any], obj: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{turn.get('_id', 'x')}", "object": obj,
            "created": int(time.time()), "model": body.get("model") or "scripted",
            "system_fingerprint": None}


def _completion(turn: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    text, reasoning, field, calls = _message(turn)
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if reasoning:
        msg[field] = reasoning
    if calls:
        msg["tool_calls"] = calls
    finish = turn.get("finish_reason") or ("tool_calls" if calls else "stop")
    out = _envelope(turn, body, "chat.completion")
    out["choices"] = [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}]
    usage = _usage(turn, body, len(text) + len(json.dumps(calls)) if calls else len(text))
    if usage is not None:
        out["usage"] = usage
    return out


def _chunks(turn: dict[str, Any], body: dict[str, Any], with_usage: bool) -> list[Any]:
    text, reasoning, field, calls = _message(turn)
    base = _envelope(turn, body, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({field: p}) for p in pieces(reasoning)]
    out += [chunk({"content": p}) for p in pieces(text)]
    for i, c in enumerate(calls):
        fn = c["function"]
        out.append(chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                          "function": {"name": fn["name"], "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                for p in pieces(fn["arguments"])]
    out.append(chunk({}, turn.get("finish_reason") or ("tool_calls" if calls else "stop")))
    usage = _usage(turn, body, len(text) + sum(len(c["function"]["arguments"]) for c in calls))
    if with_usage and usage is not None:
        out.append({**base, "choices": [], "usage": usage})
    return out
