"""Assembles one assistant Turn from Chat Completions SSE lines, tolerating real-server deviations.
Imports only `zapcli.agent.types`; works on plain dicts, so it never depends on SDK models.

Tolerated (docs/explanation/rules.md#models): tool-call deltas without `index` or `id`, or one index
for several calls; any finish_reason while calls are present; arguments as an
object, empty, double-encoded or invalid JSON (→ ToolCall.error); reasoning as
`reasoning_content`, `reasoning` or `<think>` tags; missing usage; SSE
comments, keep-alives, empty data lines, bare JSON lines; an error object in a
200; a stream cut short (→ ModelError, never a silently lost call).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from zapcli.agent.types import ModelError, ToolCall, Turn, Usage

OnDelta = Callable[[str, str], None]


class ThinkSplitter:
    """Splits streamed content into ("text" | "thinking", piece) at `<think>` tags,
    holding back a possible partial tag at the end of a piece."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self.inside = False
        self._buf = ""

    def feed(self, piece: str) -> list[tuple[str, str]]:
        self._buf += piece
        out: list[tuple[str, str]] = []
        while self._buf:
            kind = "thinking" if self.inside else "text"
            tag = self.CLOSE if self.inside else self.OPEN
            at = self._buf.find(tag)
            stray = -1 if self.inside else self._buf.find(self.CLOSE)
            if stray >= 0 and (at < 0 or stray < at):  # a close tag without an open: drop it
                out.append((kind, self._buf[:stray]))
                self._buf = self._buf[stray + len(self.CLOSE):]
                continue
            if at >= 0:
                out.append((kind, self._buf[:at]))
                self._buf = self._buf[at + len(tag):]
                self.inside = not self.inside
                continue
            keep = next((n for n in range(min(len(tag), len(self._buf)), 0, -1)
                         if tag.startswith(self._buf[-n:]) or self.CLOSE.startswith(self._buf[-n:])),
                        0)
            out.append((kind, self._buf[:len(self._buf) - keep]))
            self._buf = self._buf[len(self._buf) - keep:]
            break
        return [(k, p) for k, p in out if p]

    def flush(self) -> list[tuple[str, str]]:
        rest, self._buf = self._buf, ""
        return [("thinking" if self.inside else "text", rest)] if rest else []


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str, str | None]:
    """(arguments, raw text, error). Empty → {}; an object is taken as is; a
    JSON string holding a JSON object (double-encoded) is unwrapped once."""
    if isinstance(raw, dict):
        return raw, json.dumps(raw), None
    if raw is not None and not isinstance(raw, str):
        return None, json.dumps(raw), f"arguments must be a JSON object, got {type(raw).__name__}"
    text = raw or ""
    if not text.strip():
        return {}, text, None
    try:
        value = json.loads(text)
        if isinstance(value, str) and value.strip().startswith("{"):
            value = json.loads(value)
    except json.JSONDecodeError as e:
        return None, text, (f"arguments are not valid JSON ({e.msg} at character {e.pos}): "
                            f"{text[:200]}")
    if not isinstance(value, dict):
        return None, text, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, text, None


def _is_complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return bool(text.strip())


class _Call:
    def __init__(self, call_id: str | None, index: int | None):
        self.id, self.index, self.name = call_id, index, ""
        self.parts: list[str] = []
        self.obj: Any = None

    @property
    def args_text(self) -> str:
        return "".join(self.parts)


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        msg = err.get("message") or err.get("error") or json.dumps(err)
        code = err.get("code") or err.get("type")
        return f"{msg} ({code})" if code and str(code) not in str(msg) else str(msg)
    return str(err)


class TurnAssembler:
    """Feed it SSE lines (`feed_line`) or a whole JSON body (`feed_body`); then
    `finish()` returns the Turn or raises ModelError. Deltas go to `on_delta`
    ("text" | "thinking", piece) as they arrive."""

    def __init__(self, on_delta: OnDelta, model: str = ""):
        self._on_delta = on_delta
        self.model = model
        self.done = False  # saw [DONE]
        self.chunks = 0
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_Call] = []
        self._by_id: dict[str, _Call] = {}
        self._by_index: dict[int, _Call] = {}
        self._think = ThinkSplitter()
        self._text_started = False
        self._data: list[str] = []
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    # -- input ---------------------------------------------------------------
    def feed_line(self, line: str) -> bool:
        """One SSE line (without its newline). Returns True after `[DONE]`."""
        line = line.rstrip("\r")
        if not line.strip():
            self._dispatch()
            return False
        if line.startswith(":"):
            return False  # comment / keep-alive
        if line.startswith("{") and not self._data:
            line = "data: " + line  # bare JSON lines (no `data:` prefix)
        field, _, value = line.partition(":")
        if field.strip() != "data":
            return False  # event:, id:, retry:, or noise
        value = value[1:] if value.startswith(" ") else value
        if value.strip() == "[DONE]":
            self._dispatch()
            self.done = True
            return True
        if not value.strip():
            return False  # an empty data line: a keep-alive
        self._data.append(value)
        if len(self._data) == 1 and _is_complete_json(value):
            self._dispatch()  # one JSON per line is the norm; don't wait for the blank line
        return False

    def _dispatch(self) -> None:
        if not self._data:
            return
        text, self._data = "\n".join(self._data), []
        try:
            obj = json.loads(text)
        except ValueError:
            raise ModelError(f"the model stream sent data that is not JSON: {text[:200]!r}") from None
        self.feed_chunk(obj)

    def feed_body(self, body: bytes | str) -> None:
        """A whole non-streamed body (a server that ignored stream=True, or an error)."""
        try:
            obj = json.loads(body)
        except ValueError:
            snippet = body[:200].decode(errors="replace") if isinstance(body, bytes) else body[:200]
            raise ModelError(f"the model endpoint answered with something that is not JSON: "
                             f"{snippet!r}") from None
        self.feed_chunk(obj)
        self.done = True

    def feed_chunk(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        if obj.get("error") and not obj.get("choices"):
            err = obj["error"]
            busy = "overloaded" in json.dumps(err) or "rate_limit" in json.dumps(err)
            raise ModelError(f"the model endpoint reported an error: {_error_text(err)}",
                             retry_after=0.0 if busy else None)  # busy: park and try again
        self.chunks += 1
        if isinstance(obj.get("model"), str) and obj["model"]:
            self.model = obj["model"]
        if isinstance(obj.get("usage"), dict):
            self.usage = _usage(obj["usage"])
        for choice in obj.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict):
                self._feed_delta(delta)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def _feed_delta(self, delta: dict[str, Any]) -> None:
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._emit("thinking", reasoning)
        if isinstance(delta.get("content"), str):
            for kind, piece in self._think.feed(delta["content"]):
                self._emit(kind, piece)
        for tc in delta.get("tool_calls") or []:
            if isinstance(tc, dict):
                self._feed_call(tc)
        if isinstance(delta.get("function_call"), dict):  # the legacy single-call form
            self._feed_call({"function": delta["function_call"]})

    def _emit(self, kind: str, piece: str) -> None:
        if kind == "text":
            if not self._text_started:
                piece = piece.lstrip()
                if not piece:
                    return
                self._text_started = True
            self._text.append(piece)
        else:
            self._reasoning.append(piece)
        self._on_delta(kind, piece)

    def _feed_call(self, tc: dict[str, Any]) -> None:
        fn: dict[str, Any] = tc["function"] if isinstance(tc.get("function"), dict) else {}
        name = fn.get("name") or tc.get("name")
        args = fn["arguments"] if "arguments" in fn else tc.get("arguments")
        cid = tc.get("id") or None
        idx = tc["index"] if isinstance(tc.get("index"), int) else None
        call = self._by_id.get(cid) if cid else None
        if call is None and idx is not None and (cand := self._by_index.get(idx)) is not None:
            if not self._starts_new(cand, cid, name):
                call = cand
        if call is None and idx is None and cid is None and self._calls:
            if not self._starts_new(self._calls[-1], None, name):
                call = self._calls[-1]
        if call is None:
            call = _Call(cid, idx)
            self._calls.append(call)
            if idx is not None:
                self._by_index[idx] = call
        if cid and not call.id:
            call.id = cid
        if call.id:
            self._by_id[call.id] = call
        if name and not call.name:
            call.name = str(name)
        if isinstance(args, str):
            call.parts.append(args)
        elif args is not None:
            call.obj = args

    @staticmethod
    def _starts_new(cand: _Call, cid: str | None, name: Any) -> bool:
        """Does a delta for `cand`'s slot begin another call? Yes when its id
        differs, or it names a tool while `cand` is already named and either
        the name differs or `cand`'s arguments are already complete."""
        if cid and cand.id and cid != cand.id:
            return True
        if name and cand.name:
            return name != cand.name or cand.obj is not None or _is_complete_json(cand.args_text)
        return False

    # -- output --------------------------------------------------------------
    def finish(self) -> Turn:
        """The assembled Turn. Raises ModelError when the stream was cut short."""
        self._dispatch()
        for kind, piece in self._think.flush():
            self._emit(kind, piece)
        if not self.done and self.finish_reason is None:
            named = [c.name or "?" for c in self._calls]
            what = (f"the tool call(s) {', '.join(f'`{n}`' for n in named)} may be incomplete "
                    "and were not run" if named else "the answer may be cut off")
            raise ModelError("the model stream ended before the model finished (no finish_reason,"
                             f" no [DONE]): {what}; check the server's logs or retry")
        calls = []
        for n, c in enumerate(self._calls):
            args, raw, error = parse_arguments(c.obj if c.obj is not None else c.args_text)
            if not c.name.strip():
                args, error = None, "the tool call has no function name"
            calls.append(ToolCall(call_id=c.id or f"call_{n}_{secrets.token_hex(4)}",
                                  name=c.name.strip(), arguments=args, raw_arguments=raw,
                                  error=error))
        return Turn(text="".join(self._text), reasoning="".join(self._reasoning),
                    tool_calls=calls, usage=self.usage, finish_reason=self.finish_reason,
                    model=self.model)


def _usage(u: dict[str, Any]) -> Usage:
    def num(*keys: str, src: Any = u) -> int:
        for k in keys:
            v = src.get(k) if isinstance(src, dict) else None
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return int(v)
        return 0

    details = u.get("prompt_tokens_details")
    cached = num("cached_tokens", src=details) or num("cached_tokens")
    # written to the cache: gateways for Anthropic models report it so, OpenAI does not
    written = num("cache_write_tokens", "cache_creation_input_tokens", src=details) or \
        num("cache_creation_input_tokens", "cache_write_tokens")
    return Usage(input_tokens=num("prompt_tokens", "input_tokens"),
                 output_tokens=num("completion_tokens", "output_tokens"), cached_tokens=cached,
                 cache_write_tokens=written)
