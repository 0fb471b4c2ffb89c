"""The OpenAI Responses protocol of the scripted server: `POST /v1/responses`
(SSE streaming, or one JSON response) and `GET /v1/models`. Imports only the
standard library and `zapcli.testing.script` / `.server`.

Conversation key. A Responses request carries `instructions` and an `input`
list. Agent CLIs put context before the task: Codex 0.169 sends no
`instructions` at all but opens `input` with `developer` messages (its base
prompt, permissions, skills, the definition's developer_instructions), then
`user` messages holding `<environment_context>` (cwd, shell, date) or
AGENTS.md blocks, then the user's task. The key is (system, user, thread):
- system: `instructions` and the `developer`/`system` messages that open the
  input, joined by a blank line;
- user: the text of every `user` message up to the first other item (the
  first item the model produced), joined by a blank line. A rule's `match`
  (a substring of user or system) so finds the task text whatever context
  came first. Every request of one conversation repeats this opening, so it
  keeps its key however many calls and outputs follow (context added later
  comes after the first model item and is not part of the key);
- thread: `prompt_cache_key` when the client sends one (Codex: its thread
  id), so two runs with the same task in the same folder are two
  conversations, while a resumed thread (`codex exec resume`, same thread id
  and opening) advances the conversation it left.

Turns are rendered as output items: `reasoning` → a reasoning item with one
summary part, `text` → a message item, each of `tool_calls` → a
function_call item (`call_id` from the call's `id`), or with `custom: true`
a custom_tool_call item whose `input` is the call's `arguments` string (how
Codex's freeform `apply_patch` tool is called); a call's `namespace` is
copied onto its function_call item (Codex calls an MCP tool `echo` of server
`srv` as name `echo`, namespace `mcp__srv`). Faults: `http_error` →
an HTTP error reply; `error_200` → a stream that starts and then ends in
`response.failed` (with `error.message`); `raw` + `close: abort` → the stream
is cut off without `response.completed`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from zapcli.testing.chat import openai_error as _error
from zapcli.testing.chat import openai_turn, scripted_http_error
from zapcli.testing.script import estimate_tokens, pieces, text_of
from zapcli.testing.server import Handler, Protocol

_MODEL_MADE = ("call", "call_output", "reasoning")  # function_call, custom_tool_call, ...


def conversation_key(body: dict[str, Any]) -> tuple[str, str, str]:
    """(system, user, thread) of a Responses request; see the module doc."""
    items = body.get("input")
    system = [str(body.get("instructions") or "")]
    users: list[str] = []
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else \
            items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind, role = str(item.get("type") or "message"), item.get("role")
        if kind == "message" and role in ("developer", "system") and not users:
            system.append(text_of(item.get("content")))
        elif kind == "message" and role == "user":
            users.append(text_of(item.get("content")))
        elif kind != "message" and role != "assistant" and not kind.endswith(_MODEL_MADE):
            continue  # e.g. codex's leading `additional_tools` item: not part of the conversation
        else:
            break  # the first item the model produced ends the opening messages
    thread = body.get("prompt_cache_key")
    return ("\n\n".join(s for s in system if s), "\n\n".join(users),
            thread if isinstance(thread, str) else "")


def _usage(turn: dict[str, Any], body: dict[str, Any], out_chars: int,
           reasoning_chars: int) -> dict[str, Any] | None:
    if "usage" in turn and turn["usage"] is None:
        return None
    u = dict(turn.get("usage") or {})
    inp = u.get("prompt_tokens", estimate_tokens([body.get("instructions"), body.get("input")]))
    out = u.get("completion_tokens", max(1, (out_chars + reasoning_chars) // 4))
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": u.get("cached_tokens", 0)},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": u.get("reasoning_tokens",
                                                               reasoning_chars // 4)},
            "total_tokens": inp + out}


def output_items(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The turn's output items, completed, in the order they are streamed."""
    tid = turn.get("_id", "x")
    out: list[dict[str, Any]] = []
    if turn.get("reasoning"):
        out.append({"id": f"rs_{tid}", "type": "reasoning", "summary": [
            {"type": "summary_text", "text": turn["reasoning"]}]})
    if turn.get("text") or not turn.get("tool_calls"):
        out.append({"id": f"msg_{tid}", "type": "message", "status": "completed",
                    "role": "assistant", "content": [
                        {"type": "output_text", "text": turn.get("text") or "",
                         "annotations": [], "logprobs": []}]})
    for i, c in enumerate(turn.get("tool_calls") or []):
        args = c.get("arguments", {})
        args = args if isinstance(args, str) else json.dumps(args)
        call = {"id": f"fc_{tid}_{i}", "status": "completed",
                "call_id": c.get("id") or f"call_{tid}_{i}", "name": c["name"]}
        if c.get("custom"):
            out.append({**call, "id": f"ctc_{tid}_{i}", "type": "custom_tool_call", "input": args})
        else:
            ns = {"namespace": c["namespace"]} if c.get("namespace") else {}
            out.append({**call, "type": "function_call", **ns, "arguments": args})
    return out


class ResponsesProtocol(Protocol):
    name = "responses"

    def get(self, h: Handler, path: str) -> None:
        if path.split("?")[0].rstrip("/") != "/v1/models":
            return _error(h, 404, f"Invalid URL (GET {path})")
        ids = self.server.models or ["scripted"]
        h.send_json(200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "zapcli"} for m in ids]})

    def post(self, h: Handler, path: str, body: dict[str, Any]) -> None:
        if path.split("?")[0].rstrip("/") != "/v1/responses":
            return _error(h, 404, f"Invalid URL (POST {path})")
        if body.get("_invalid"):
            return _error(h, 400, "We could not parse the JSON body of your request.")
        turn = openai_turn(self.server, h, body, conversation_key(body))
        if turn is not None:
            self._answer(h, turn, body)

    def _answer(self, h: Handler, turn: dict[str, Any], body: dict[str, Any]) -> None:
        if err := turn.get("http_error"):
            return scripted_http_error(h, err)
        if "raw" in turn:
            return h.send_stream(turn["raw"], turn.get("close", "clean"))
        if not body.get("stream"):
            resp = _response(turn, body, "completed")
            if err := turn.get("error_200"):
                resp.update(status="failed", output=[], usage=None, error=_err(err))
            return h.send_json(200, resp)
        h.send_stream([_sse(e) for e in _events(turn, body)])


def _err(err: dict[str, Any]) -> dict[str, Any]:
    return {"code": err.get("code") or err.get("type") or "server_error",
            "message": err.get("message", "scripted error")}


def _response(turn: dict[str, Any], body: dict[str, Any], status: str) -> dict[str, Any]:
    items = output_items(turn) if status == "completed" else []
    text = "".join(p["text"] for i in items if i["type"] == "message" for p in i["content"])
    calls = sum(len(i.get("arguments") or i.get("input") or "") for i in items
                if i["type"] in ("function_call", "custom_tool_call"))
    return {"id": f"resp_{turn.get('_id', 'x')}", "object": "response",
            "created_at": int(time.time()), "status": status, "error": None,
            "incomplete_details": None, "instructions": body.get("instructions"),
            "model": body.get("model") or "scripted", "output": items,
            "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
            "usage": _usage(turn, body, len(text) + calls, len(turn.get("reasoning") or ""))
            if status == "completed" else None}


def _sse(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"


def _events(turn: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """The SSE events of one streamed turn (without sequence numbers yet)."""
    start = _response(turn, body, "in_progress")
    ev: list[dict[str, Any]] = [{"type": "response.created", "response": start},
                                {"type": "response.in_progress", "response": start}]
    if err := turn.get("error_200"):
        failed = dict(start, status="failed", error=_err(err))
        ev.append({"type": "response.failed", "response": failed})
        return _numbered(ev)
    for idx, item in enumerate(output_items(turn)):
        ev += _item_events(idx, item)
    ev.append({"type": "response.completed", "response": _response(turn, body, "completed")})
    return _numbered(ev)


def _numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(e, sequence_number=n) for n, e in enumerate(events)]


def _item_events(idx: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    iid, kind = item["id"], item["type"]
    at = {"item_id": iid, "output_index": idx}
    if kind == "message":
        text = item["content"][0]["text"]
        empty = dict(item, status="in_progress", content=[])
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        return [{"type": "response.output_item.added", "output_index": idx, "item": empty},
                {"type": "response.content_part.added", **at, "content_index": 0, "part": part},
                *({"type": "response.output_text.delta", **at, "content_index": 0, "delta": p,
                   "logprobs": []} for p in pieces(text)),
                {"type": "response.output_text.done", **at, "content_index": 0, "text": text,
                 "logprobs": []},
                {"type": "response.content_part.done", **at, "content_index": 0,
                 "part": dict(part, text=text)},
                {"type": "response.output_item.done", "output_index": idx, "item": item}]
    if kind == "reasoning":
        text = item["summary"][0]["text"]
        part = {"type": "summary_text", "text": ""}
        return [{"type": "response.output_item.added", "output_index": idx,
                 "item": dict(item, summary=[])},
                {"type": "response.reasoning_summary_part.added", **at, "summary_index": 0,
                 "part": part},
                *({"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0,
                   "delta": p} for p in pieces(text)),
                {"type": "response.reasoning_summary_text.done", **at, "summary_index": 0,
                 "text": text},
                {"type": "response.reasoning_summary_part.done", **at, "summary_index": 0,
                 "part": dict(part, text=text)},
                {"type": "response.output_item.done", "output_index": idx, "item": item}]
    if kind == "custom_tool_call":
        return [{"type": "response.output_item.added", "output_index": idx,
                 "item": dict(item, status="in_progress", input="")},
                *({"type": "response.custom_tool_call_input.delta", **at, "delta": p}
                  for p in pieces(item["input"])),
                {"type": "response.custom_tool_call_input.done", **at, "input": item["input"]},
                {"type": "response.output_item.done", "output_index": idx, "item": item}]
    args = item["arguments"]
    return [{"type": "response.output_item.added", "output_index": idx,
             "item": dict(item, status="in_progress", arguments="")},
            *({"type": "response.function_call_arguments.delta", **at, "delta": p}
              for p in pieces(args)),
            {"type": "response.function_call_arguments.done", **at, "name": item["name"],
             "arguments": args},
            {"type": "response.output_item.done", "output_index": idx, "item": item}]
