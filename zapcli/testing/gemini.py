"""The Gemini API (generateContent) protocol of the scripted server, as the
Gemini CLI and the google-genai SDKs speak it. Imports only the standard
library and `zapcli.testing.script` / `.server`.

Point a client at `ScriptedServer(..., protocol="gemini").base_url`, the
root (the SDK appends `/v1beta`): `GOOGLE_GEMINI_BASE_URL=<root_url>`, any
`GEMINI_API_KEY` (checked only when the server has `api_key`; sent as the
`x-goog-api-key` header or `?key=`).

Routes (under /v1beta):
  POST models/{model}:streamGenerateContent[?alt=sse]  SSE of
       GenerateContentResponse chunks: thought parts (`thought: true`), text
       parts, then one chunk with every `functionCall` part; the last chunk
       carries `finishReason` and `usageMetadata` (promptTokenCount,
       candidatesTokenCount, thoughtsTokenCount, cachedContentTokenCount,
       totalTokenCount).
  POST models/{model}:generateContent   the same as one JSON response.
  POST models/{model}:countTokens       {"totalTokens": size estimate}.
  GET  models, models/{model}           the model list / one model.

Conversation key = (systemInstruction text, text of the first `user`
content). The Gemini CLI sends its session context (date, OS, folder
structure) and the task as two parts of that first content, so a rule whose
`match` is a substring of the task matches, and the key stays the same for
every turn of that run.

Side requests never consume the script's turns:
  * A request that asks for JSON (`generationConfig.responseJsonSchema`,
    `responseSchema` or `responseMimeType: application/json`) is a utility
    call of the CLI (model routing classifier, next-speaker check, loop
    detection, edit correction, ...). It is answered with a minimal instance
    of its schema (first enum value, "scripted", integer 1, number 0, false,
    []), which means: route to the first choice (flash), the user speaks
    next, no loop, no correction. It is recorded but never reads the script.
  * Other side requests (history compression, session summary, web-fetch
    summarisation) carry a system prompt or first message of their own, so
    they are a different conversation: they cannot advance the agent's
    conversation. A non-streaming request that no rule matches gets a
    neutral text instead of an error, so a side request never fails a run.

Script turns map as: `text` -> text parts; `reasoning` -> thought parts;
`tool_calls` -> functionCall parts ({name, args, id?}; `arguments` given as a
string is parsed as JSON, or sent as {"raw": string} when it is not JSON);
`finish_reason` -> finishReason (stop/tool_calls -> STOP, length ->
MAX_TOKENS, content_filter -> SAFETY, others upper-cased); `usage`:
{prompt_tokens, completion_tokens, cached_tokens?, thoughts_tokens?};
`http_error` -> Google's error JSON {"error": {code, message, status}} (a
429 carries a RetryInfo of `retry_after_ms`; the script's `code` becomes
`status`); `error_200` -> an `{"error": ...}` JSON chunk after the SSE events
already sent, as Google does mid-stream (its `code` is the numeric code,
default 500: the CLI retries 5xx with backoff, 4xx not); `raw` + `close`.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from zapcli.testing.script import estimate_tokens, pieces
from zapcli.testing.server import Handler, Protocol

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
           404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
           500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS",
           "content_filter": "SAFETY"}
_ROUTE = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):(\w+)$")
NO_RULE_TEXT = "[scripted server: no rule matches this side request]"


def google_error(code: int, message: str, status: str | None = None,
                 retry_after_ms: int | None = None) -> dict[str, Any]:
    """Google's error body: {"error": {code, message, status, details?}}."""
    err: dict[str, Any] = {"code": code, "message": message,
                           "status": status or _STATUS.get(code, "UNKNOWN")}
    if retry_after_ms is not None:
        err["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                           "retryDelay": f"{retry_after_ms / 1000:g}s"}]
    return {"error": err}


def _parts_text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    return "".join(p["text"] for p in content.get("parts") or []
                   if isinstance(p, dict) and isinstance(p.get("text"), str))


def conversation_key(body: dict[str, Any]) -> tuple[str, str]:
    """(systemInstruction text, text of the first user content)."""
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    if isinstance(system, str):
        system_text = system
    else:
        system_text = _parts_text(system)
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    first = next((c for c in contents if c.get("role", "user") == "user"), None)
    return system_text, _parts_text(first)


def json_schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The schema of a request that asks for JSON ({} when none given), else None."""
    cfg = body.get("generationConfig") or body.get("generation_config") or {}
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
    if isinstance(schema, dict):
        return schema
    return {} if cfg.get("responseMimeType") == "application/json" else None


def schema_instance(schema: Any) -> Any:
    """A minimal value that satisfies `schema` (OpenAPI or JSON-Schema types)."""
    if not isinstance(schema, dict):
        return {}
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type") or ("object" if "properties" in schema else "")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: schema_instance(v) for k, v in props.items()}
    return {"string": "scripted", "integer": 1, "number": 0, "boolean": False,
            "array": []}.get(kind, {})


def _usage(turn: dict[str, Any], body: dict[str, Any], out_chars: int,
           thought_chars: int) -> dict[str, Any] | None:
    if "usage" in turn and turn["usage"] is None:
        return None
    u = dict(turn.get("usage") or {})
    prompt = int(u.get("prompt_tokens", estimate_tokens(body.get("contents", []))))
    out = int(u.get("completion_tokens", max(1, out_chars // 4)))
    thoughts = int(u.get("thoughts_tokens", thought_chars // 4 if thought_chars else 0))
    meta: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": out,
                            "totalTokenCount": prompt + out + thoughts}
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if u.get("cached_tokens"):
        meta["cachedContentTokenCount"] = int(u["cached_tokens"])
    return meta


def _calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for c in turn.get("tool_calls") or []:
        args = c.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {"raw": args}
        call: dict[str, Any] = {"name": c["name"], "args": args}
        if c.get("id"):
            call["id"] = c["id"]
        out.append({"functionCall": call})
    return out


def _finish(turn: dict[str, Any]) -> str:
    reason = str(turn.get("finish_reason") or "stop")
    return _FINISH.get(reason, reason.upper())


class GeminiProtocol(Protocol):
    name = "gemini"
    base_path = ""  # GOOGLE_GEMINI_BASE_URL is the root: the CLI and SDKs append /v1beta
    url_variable = "GOOGLE_GEMINI_BASE_URL"

    def get(self, h: Handler, path: str) -> None:
        route = urlsplit(path).path.rstrip("/")
        ids = self.server.models or ["gemini-2.5-pro", "gemini-2.5-flash"]
        if route in ("/v1beta/models", "/v1/models"):
            return h.send_json(200, {"models": [_model(m) for m in ids]})
        if route.startswith(("/v1beta/models/", "/v1/models/")):
            model = route.rsplit("/", 1)[1]
            if self.server.models is None or model in self.server.models:
                return h.send_json(200, _model(model))
            return h.send_json(404, google_error(404, f"models/{model} is not found"))
        h.send_json(404, google_error(404, f"Invalid URL (GET {path})"))

    def post(self, h: Handler, path: str, body: dict[str, Any]) -> None:
        url = urlsplit(path)
        m = _ROUTE.match(url.path)
        if not m or m.group(2) not in ("generateContent", "streamGenerateContent", "countTokens"):
            return h.send_json(404, google_error(404, f"Invalid URL (POST {url.path})"))
        if body.get("_invalid"):
            return h.send_json(400, google_error(400, "Invalid JSON payload received."))
        srv = self.server
        srv.record(body)
        key = h.headers.get("x-goog-api-key") or (parse_qs(url.query).get("key") or [""])[0]
        if srv.api_key is not None and key != srv.api_key:
            return h.send_json(400, google_error(
                400, "API key not valid. Please pass a valid API key."))
        model, method = m.group(1), m.group(2)
        if srv.models is not None and model not in srv.models:
            return h.send_json(404, google_error(
                404, f"models/{model} is not found for API version v1beta, or is not "
                "supported for generateContent."))
        if method == "countTokens":
            return h.send_json(200, {"totalTokens": estimate_tokens(body.get("contents", []))})
        self._generate(h, model, body, stream=method == "streamGenerateContent")

    def _generate(self, h: Handler, model: str, body: dict[str, Any], stream: bool) -> None:
        schema = json_schema_of(body)
        if schema is not None:  # a utility call of the CLI: never the script's turns
            turn: dict[str, Any] = {"text": json.dumps(schema_instance(schema)), "_id": "util"}
        else:
            found, why = self.server.conversations.next_turn(*conversation_key(body))
            if found is None and stream:
                return h.send_json(400, google_error(400, why))
            turn = found or {"text": NO_RULE_TEXT, "_id": "side"}
        self.server.conversations.pause(turn)
        turn = self.server.fill(turn)  # after its hold: a variable set meanwhile is in
        if err := turn.get("http_error"):
            code = int(err.get("status", 500))
            if err.get("body") is not None:  # the provider's own body, verbatim
                return h.send_json(code, err["body"], err.get("headers"))
            return h.send_json(code, google_error(
                code, err.get("message", f"scripted HTTP {code}"), err.get("code"),
                int(err.get("retry_after_ms", 10)) if code == 429 else None))
        if err := turn.get("error_200"):
            code = int(err.get("code") or 500)
            error = google_error(code, err["message"], err.get("type"))
            if not stream:
                return h.send_json(200, error)
            return h.send_stream(_chunks(turn, body, model, final=False) + [0.05, json.dumps(error)])
        if "raw" in turn:
            return h.send_stream(turn["raw"], turn.get("close", "clean"))
        if stream:
            return h.send_stream(_chunks(turn, body, model))
        h.send_json(200, _response(turn, body, model))


def _model(model: str) -> dict[str, Any]:
    return {"name": f"models/{model}", "baseModelId": model, "version": "scripted",
            "displayName": model, "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "countTokens"]}


def _envelope(turn: dict[str, Any], model: str, parts: list[dict[str, Any]],
              finish: str | None = None) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "modelVersion": model,
            "responseId": f"scripted-{turn.get('_id', 'x')}"}


def _response(turn: dict[str, Any], body: dict[str, Any], model: str) -> dict[str, Any]:
    reasoning, text = turn.get("reasoning") or "", turn.get("text") or ""
    parts: list[dict[str, Any]] = [{"text": reasoning, "thought": True}] if reasoning else []
    parts += ([{"text": text}] if text else []) + _calls(turn)
    out = _envelope(turn, model, parts or [{"text": ""}], _finish(turn))
    calls_chars = len(json.dumps(turn.get("tool_calls"))) if turn.get("tool_calls") else 0
    if (usage := _usage(turn, body, len(text) + calls_chars, len(reasoning))) is not None:
        out["usageMetadata"] = usage
    return out


def _chunks(turn: dict[str, Any], body: dict[str, Any], model: str,
            final: bool = True) -> list[Any]:
    """SSE events of one streamed turn; the last one carries finishReason and
    usage (with `final=False`, the content only: an error follows)."""
    reasoning, text = turn.get("reasoning") or "", turn.get("text") or ""
    groups = [[{"text": p, "thought": True}] for p in pieces(reasoning)]
    groups += [[{"text": p}] for p in pieces(text)]
    if calls := _calls(turn):
        groups.append(calls)
    if not final:
        return [_envelope(turn, model, g) for g in groups]
    if not groups:
        groups = [[{"text": ""}]]
    out: list[Any] = [_envelope(turn, model, g) for g in groups[:-1]]
    last = _envelope(turn, model, groups[-1], _finish(turn))
    calls_chars = len(json.dumps(calls)) if calls else 0
    if (usage := _usage(turn, body, len(text) + calls_chars, len(reasoning))) is not None:
        last["usageMetadata"] = usage
    out.append(last)
    return out
