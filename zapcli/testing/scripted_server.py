"""A scripted OpenAI-compatible HTTP server (Chat Completions, SSE streaming, /v1/models).
Imports only the standard library (PyYAML lazily, for `.yml`/`.yaml` scripts).

A script is a list of rules. Each rule has an optional `match` (a substring of
the conversation's first user message or of its system prompt; no `match`
matches everything), a list of `turns`, and optional `loop: true` (start over
when the turns run out; otherwise the conversation gets a closing text turn).
A conversation is identified by its system prompt and first user message; it
takes the first rule that matches and advances one turn per request.

Turn keys (all optional):
  text: str                  assistant text, streamed in small pieces
  reasoning: str             reasoning, sent as `reasoning_field` (default
  reasoning_field: str         "reasoning_content"; or "reasoning"; or
                               "think_tags" = `<think>...</think>` in the text)
  tool_calls: [{name, arguments, id?}]   arguments: an object (sent as JSON)
                               or a string (sent verbatim, e.g. invalid JSON)
  usage: {prompt_tokens, completion_tokens, cached_tokens?} | null
                               absent = estimated from sizes; null = not sent
  finish_reason: str         default "tool_calls" when calls, else "stop"
  http_error: {status, times=1, message?, code?, retry_after_ms=10}
                               answer with this HTTP error `times` times, then
                               serve the next turn
  error_200: {message, type?, code?}   an error object inside an HTTP 200
  raw: [str | object, ...]   streamed verbatim: strings as-is, objects as
                               `data: <json>\\n\\n`; add "data: [DONE]\\n\\n" yourself
  close: "clean" | "abort"   how a raw stream ends ("abort": no final chunk)
  delay_s: float             sleep before answering

Strings may hold placeholders `{name}` filled from `variables`.
Run as a process: `python -m zapcli.testing.scripted_server --script FILE
[--port 0] [--var NAME=VALUE]...`; the first stdout line is
`listening http://127.0.0.1:PORT/v1`; it serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_RULE_KEYS = {"match", "turns", "loop"}
_TURN_KEYS = {"text", "reasoning", "reasoning_field", "tool_calls", "usage", "finish_reason",
              "http_error", "error_200", "raw", "close", "delay_s"}
EXHAUSTED_TEXT = "[scripted server: this conversation has no more turns]"


class ScriptError(ValueError):
    """The script is malformed; the message names the rule and turn."""


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """Read a script from a JSON or YAML file (a list of rules, or {rules: [...]})."""
    text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith((".yml", ".yaml")):
        import yaml

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    return validate_script(data)


def validate_script(data: Any) -> list[dict[str, Any]]:
    """Return the rules of `data`; raise ScriptError naming what is wrong."""
    if isinstance(data, dict) and "rules" in data:
        data = data["rules"]
    if not isinstance(data, list):
        raise ScriptError("a script is a list of rules")
    for i, rule in enumerate(data):
        if not isinstance(rule, dict) or not isinstance(rule.get("turns"), list):
            raise ScriptError(f"rule {i}: expected a mapping with a `turns` list")
        if unknown := set(rule) - _RULE_KEYS:
            raise ScriptError(f"rule {i}: unknown key(s) {sorted(unknown)}")
        for j, turn in enumerate(rule["turns"]):
            if not isinstance(turn, dict):
                raise ScriptError(f"rule {i} turn {j}: expected a mapping")
            if unknown := set(turn) - _TURN_KEYS:
                raise ScriptError(f"rule {i} turn {j}: unknown key(s) {sorted(unknown)}; "
                                  f"valid: {sorted(_TURN_KEYS)}")
            err = turn.get("http_error")
            if err is not None and not (isinstance(err, dict) and int(err.get("times", 1)) >= 1):
                raise ScriptError(f"rule {i} turn {j}: http_error needs {{status, times >= 1}}")
            e200 = turn.get("error_200")
            if e200 is not None and not (isinstance(e200, dict) and isinstance(e200.get("message"), str)):
                raise ScriptError(f"rule {i} turn {j}: error_200 needs {{message, type?, code?}}, "
                                  f"got {e200!r}")
            if "close" in turn and (turn["close"] not in ("clean", "abort") or "raw" not in turn):
                raise ScriptError(f"rule {i} turn {j}: close is \"clean\" or \"abort\" and goes with "
                                  f"`raw` (got {turn['close']!r}); to cut a stream short, give "
                                  "`raw` lines without a final chunk and close: \"abort\"")
            raw = turn.get("raw")
            if raw is not None and not (isinstance(raw, list)
                                        and all(isinstance(x, (str, dict)) for x in raw)):
                raise ScriptError(f"rule {i} turn {j}: raw is a list of SSE strings (sent "
                                  "verbatim, each ending in \\n\\n) or chunk objects")
    return data


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _pieces(text: str, size: int = 12) -> Iterable[str]:
    return (text[i:i + size] for i in range(0, len(text), size))


class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers from a script.

    `ScriptedServer(script, variables=None, models=None, api_key=None, port=0)`;
    `models`: ids served by /v1/models (others get 404 model_not_found; None
    accepts any model); `api_key`: when set, other bearer tokens get 401.
    Use as a context manager or call start()/stop(). `base_url` ends in /v1.
    `requests` is a copy of every chat-completions request body received.
    """

    def __init__(self, script: Any, *, variables: dict[str, str] | None = None,
                 models: list[str] | None = None, api_key: str | None = None, port: int = 0):
        self.rules = validate_script(script)
        self.variables: dict[str, str] = dict(variables or {})
        self.models = models
        self.api_key = api_key
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._convs: dict[tuple[str, str], dict[str, Any]] = {}
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.scripted = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def start(self) -> ScriptedServer:
        """Serve on a background thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                            name="scripted-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; requests in flight are abandoned."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script state ------------------------------------------------------
    def fill(self, value: Any) -> Any:
        """Replace `{name}` placeholders in every string inside `value`."""
        if isinstance(value, str):
            for name, sub in self.variables.items():
                value = value.replace("{" + name + "}", str(sub))
            return value
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def _record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)

    def next_turn(self, body: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """The turn to serve for this request, or (None, why) when no rule matches."""
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        system = next((_text_of(m.get("content")) for m in msgs if m.get("role") == "system"), "")
        user = next((_text_of(m.get("content")) for m in msgs if m.get("role") == "user"), "")
        with self._lock:
            conv = self._convs.get((system, user))
            if conv is None:
                for idx, rule in enumerate(self.rules):
                    m = rule.get("match")
                    if m is None or m in user or m in system:
                        conv = {"rule": idx, "turn": 0, "failed": 0, "n": len(self._convs)}
                        break
                else:
                    return None, f"scripted server: no rule matches the user message {user[:80]!r}"
                self._convs[(system, user)] = conv
            turns = self.rules[conv["rule"]]["turns"]
            while True:
                if conv["turn"] >= len(turns):
                    if not self.rules[conv["rule"]].get("loop") or not turns:
                        return {"text": EXHAUSTED_TEXT}, ""
                    conv["turn"] = 0
                turn = turns[conv["turn"]]
                err = turn.get("http_error")
                if err is not None and conv["failed"] < int(err.get("times", 1)):
                    conv["failed"] += 1
                    return turn, ""
                conv["turn"] += 1
                conv["failed"] = 0
                if err is None:
                    return dict(turn, _id=f"{conv['n']}_{conv['turn']}"), ""


def _usage(turn: dict[str, Any], body: dict[str, Any], out_chars: int) -> dict[str, Any] | None:
    if "usage" in turn and turn["usage"] is None:
        return None
    u = dict(turn.get("usage") or {})
    prompt = u.get("prompt_tokens", max(1, len(json.dumps(body.get("messages", []))) // 4))
    completion = u.get("completion_tokens", max(1, out_chars // 4))
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": u.get("cached_tokens", 0)}}


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


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is normal
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "zapcli-scripted/1"

    @property
    def srv(self) -> ScriptedServer:
        return self.server.scripted  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        pass

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, code: str | None = None,
               etype: str = "invalid_request_error", headers: dict[str, str] | None = None) -> None:
        self._json(status, {"error": {"message": message, "type": etype, "param": None,
                                      "code": code}}, headers)

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            return self._error(404, f"Invalid URL (GET {self.path})")
        ids = self.srv.models or ["scripted"]
        self._json(200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "zapcli"} for m in ids]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._error(404, f"Invalid URL (POST {self.path})")
        try:
            body = json.loads(raw or b"null")
            assert isinstance(body, dict)
        except (ValueError, AssertionError):
            return self._error(400, "We could not parse the JSON body of your request.")
        self.srv._record(body)
        srv = self.srv
        if srv.api_key is not None and self.headers.get("Authorization") != f"Bearer {srv.api_key}":
            return self._error(401, "Incorrect API key provided.", "invalid_api_key")
        model = str(body.get("model") or "")
        if srv.models is not None and model not in srv.models:
            return self._error(404, f"The model `{model}` does not exist or you do not have "
                               "access to it.", "model_not_found")
        turn, why = srv.next_turn(body)
        if turn is None:
            return self._error(400, why, "no_matching_rule")
        turn = srv.fill(turn)
        time.sleep(float(turn.get("delay_s") or 0))
        if err := turn.get("http_error"):
            status = int(err.get("status", 500))
            headers = {"retry-after-ms": str(err.get("retry_after_ms", 10))}
            etype = "rate_limit_error" if status == 429 else "server_error"
            return self._error(status, err.get("message", f"scripted HTTP {status}"),
                               err.get("code"), etype, headers)
        if err := turn.get("error_200"):
            error = {"message": err.get("message", "scripted error"), "type": err.get("type",
                     "server_error"), "code": err.get("code")}
            if not body.get("stream"):
                return self._json(200, {"error": error})
            return self._stream([{"error": error}], "clean")
        if "raw" in turn:
            return self._stream(turn["raw"], turn.get("close", "clean"))
        if body.get("stream"):
            opts = body.get("stream_options") or {}
            return self._stream(self._chunks(turn, body, bool(opts.get("include_usage")))
                                + ["data: [DONE]\n\n"], "clean")
        self._json(200, self._completion(turn, body))

    def _envelope(self, turn: dict[str, Any], body: dict[str, Any], obj: str) -> dict[str, Any]:
        return {"id": f"chatcmpl-{turn.get('_id', 'x')}", "object": obj,
                "created": int(time.time()), "model": body.get("model") or "scripted",
                "system_fingerprint": None}

    def _completion(self, turn: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        text, reasoning, field, calls = _message(turn)
        msg: dict[str, Any] = {"role": "assistant", "content": text or None}
        if reasoning:
            msg[field] = reasoning
        if calls:
            msg["tool_calls"] = calls
        finish = turn.get("finish_reason") or ("tool_calls" if calls else "stop")
        out = self._envelope(turn, body, "chat.completion")
        out["choices"] = [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}]
        usage = _usage(turn, body, len(text) + len(json.dumps(calls)) if calls else len(text))
        if usage is not None:
            out["usage"] = usage
        return out

    def _chunks(self, turn: dict[str, Any], body: dict[str, Any], with_usage: bool) -> list[Any]:
        text, reasoning, field, calls = _message(turn)
        base = self._envelope(turn, body, "chat.completion.chunk")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({field: p}) for p in _pieces(reasoning)]
        out += [chunk({"content": p}) for p in _pieces(text)]
        for i, c in enumerate(calls):
            fn = c["function"]
            out.append(chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                              "function": {"name": fn["name"], "arguments": ""}}]}))
            out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                    for p in _pieces(fn["arguments"])]
        out.append(chunk({}, turn.get("finish_reason") or ("tool_calls" if calls else "stop")))
        usage = _usage(turn, body, len(text) + sum(len(c["function"]["arguments"]) for c in calls))
        if with_usage and usage is not None:
            out.append({**base, "choices": [], "usage": usage})
        return out

    def _stream(self, items: list[Any], close: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for item in items:
                data = (item if isinstance(item, str) else f"data: {json.dumps(item)}\n\n").encode()
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
            if close == "abort":
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zapcli.testing.scripted_server",
                                description="Serve a scripted OpenAI-compatible model.")
    p.add_argument("--script", required=True, help="JSON or YAML file: a list of rules")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="fill {NAME} placeholders in the script")
    p.add_argument("--model", action="append", dest="models", metavar="ID",
                   help="serve only these model ids, listed by /v1/models (default: any "
                        "model is accepted and /v1/models lists 'scripted')")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="require the bearer token held in this environment variable")
    a = p.parse_args(argv)
    try:
        script = load_script(a.script)
    except (OSError, ValueError) as exc:
        print(f"scripted_server: {a.script}: {exc}", file=sys.stderr)
        return 2
    variables = dict(v.split("=", 1) for v in a.var if "=" in v)
    key = os.environ.get(a.api_key_env) if a.api_key_env else None
    srv = ScriptedServer(script, variables=variables, models=a.models, api_key=key, port=a.port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    srv.start()
    print(f"listening {srv.base_url}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    srv.stop()
    return 0

if __name__ == "__main__":
    sys.exit(main())
