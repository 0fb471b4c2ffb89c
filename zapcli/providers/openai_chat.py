"""The Chat Completions model client (ModelClient) over the official `openai` SDK.
Imports `zapcli.agent.types`, `zapcli.providers.stream`; `openai` only inside methods (start-up
cost), through `zapcli.providers.sdk`.

The SDK sends the request, authenticates and retries 408/409/429/5xx and
connection errors with backoff (`max_retries`); the body is read as raw SSE
lines and assembled by `TurnAssembler`, so deviations the SDK's own stream
parser would choke on (empty data lines, bare JSON, errors in a 200) are
handled. Every failure leaves as a ModelError whose reason says what to do.

The request goes through the client's own `post` (its auth, base URL,
headers and retries) with the SDK's raw-response header, not through
`client.chat.completions`: that resource imports ~19 modules more (its
request and response types, their streaming helpers, `jiter`) and
transforms the body through its TypedDicts, which for a body of plain JSON
values as this one changes nothing: ~1.1 MB of every built-in agent's runner
while it waits on the model.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from zapcli.agent.types import ModelError, Turn
from zapcli.providers import sdk
from zapcli.providers.stream import TurnAssembler

NO_KEY = "sk-no-key-required"  # local servers need none, but the SDK wants one
USAGE_LIMIT = "the model endpoint's usage limit (HTTP 429): "  # then the provider's words
RAW = "X-Stainless-Raw-Response"  # the SDK's own: "stream" returns its APIResponse, body unread


def _short(text: Any, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "…"


def busy(response: Any) -> bool:
    """A rate limit (429) or an overloaded server (529, or 503 saying
    `overloaded_error`): worth waiting for, never a reason to fail."""
    status = response.status_code
    if status in (429, 529):
        return True
    if status != 503:
        return False
    try:
        return b"overloaded" in response.read()
    except Exception:  # noqa: BLE001 - a body that cannot be read says nothing
        return False


def _spent(e: Any, msg: str, env: str) -> ModelError | None:
    """What a 429 says when it is not a rate limit but an allowance spent —
    OpenAI's `insufficient_quota` (the key's credit or plan limit), or an
    account's usage limit in a provider's words (a coding plan's "Usage limit
    reached for 5 hour … reset at …", `zapcli.limitwords`): waiting seconds
    helps nothing, so the subagent ends saying so (a usage limit with its
    reset: `zapcli.backends.agent_run`, from the error's `usage_limit`)
    instead of parking to its deadline. None for a plain rate limit."""
    import time

    from zapcli import limitwords

    code = {str(getattr(e, "code", "") or ""), str(getattr(e, "type", "") or "")}
    if "insufficient_quota" in code:
        return ModelError(f"the model provider says the quota of the key in {env} is used up "
                          f"(insufficient_quota): {msg}; waiting does not help: add credit to its "
                          "account or raise its plan's limit, or use another key or model")
    words = str(getattr(e, "message", "") or msg)
    if limitwords.read(words, now=time.time()) is not None:
        return ModelError(f"{USAGE_LIMIT}{msg}", usage_limit=words)
    return None


def retry_after(headers: Any) -> float:
    """Seconds the server asked to wait (`retry-after-ms`, `retry-after` in
    seconds or as an HTTP date); 0 when it named none."""
    try:
        if headers.get("retry-after-ms"):
            return max(float(headers["retry-after-ms"]) / 1000, 0.0)
        value = headers.get("retry-after")
        if not value:
            return 0.0
        try:
            return max(float(value), 0.0)
        except ValueError:
            import time
            from email.utils import parsedate_to_datetime

            return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, OverflowError):
        return 0.0


class ChatClient:
    """`ChatClient(model, base_url=None, api_key=None, timeout_s=120, max_retries=3,
    api_key_env="OPENAI_API_KEY")`.

    `base_url` None falls back to OPENAI_BASE_URL (then api.openai.com);
    `api_key` None to the environment variable `api_key_env`, which error
    reasons also name. `timeout_s` bounds connecting and each read of the
    stream (seconds). Constructing it is cheap: `openai` loads on first use.
    """

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120, max_retries: int = 3, *,
                 api_key_env: str = "OPENAI_API_KEY"):
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.api_key_env = api_key_env
        self._sdk: Any = None
        # Called with (HTTP status, text) for every error answer, including the
        # ones the SDK then retries, which would otherwise leave no trace.
        self.on_http_error: Callable[[int, str], None] | None = None

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def endpoint(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def _client(self) -> Any:
        if self._sdk is None:
            openai = sdk.load()

            key = self._api_key or os.environ.get(self.api_key_env)
            if not key:
                if self.base_url is None:
                    raise ModelError(f"no API key: set {self.api_key_env}, or set OPENAI_BASE_URL "
                                     "to a local server that needs none")
                key = NO_KEY
            http = openai.DefaultHttpxClient(event_hooks={"response": [self._seen]})
            self._sdk = openai.OpenAI(api_key=key, base_url=self.base_url, http_client=http,
                                      timeout=self.timeout_s, max_retries=self.max_retries)
        return self._sdk

    def _seen(self, response: Any) -> None:
        """httpx response hook: report error answers (each attempt, retried or
        not). A rate limit or an overloaded server is not retried by the SDK
        (its documented `x-should-retry` header): the agent loop parks on it
        for as long as the server asks, visibly, until its deadline."""
        if busy(response):
            response.headers["x-should-retry"] = "false"
        if response.status_code < 400 or self.on_http_error is None:
            return
        headers = response.headers
        wait = (f"; the server asks to wait {headers['retry-after-ms']} ms" if "retry-after-ms" in headers
                else f"; the server asks to wait {headers['retry-after']} s" if "retry-after" in headers
                else "")
        try:
            status = response.status_code
            retried = ("" if busy(response) else f" (retried up to {self.max_retries} times)"
                       if status >= 500 else "")
            self.on_http_error(status, f"the model endpoint answered HTTP {status}{wait}{retried}")
        except Exception:  # noqa: BLE001 - reporting must never break a request
            pass

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 on_delta: Callable[[str, str], None]) -> Turn:
        """Stream one assistant turn; `on_delta(kind, piece)` with kind "text" or
        "thinking". `tools` are OpenAI tool objects (omitted when empty).
        Raises ModelError (after the SDK's retries) with an actionable reason."""
        openai = sdk.load()

        params: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True,
                                  "stream_options": {"include_usage": True}}
        if tools:
            params["tools"] = tools
        try:
            try:
                return self._stream(params, on_delta)
            except openai.BadRequestError as e:
                if "stream_options" not in str(e.message):
                    raise
                del params["stream_options"]  # an older server that rejects usage reporting
                return self._stream(params, on_delta)
        except openai.OpenAIError as e:
            raise self.explain(e) from None

    def _stream(self, params: dict[str, Any], on_delta: Callable[[str, str], None]) -> Turn:
        asm = TurnAssembler(on_delta, self.model)
        resp = self._client().post("/chat/completions", body=params, cast_to=object,
                                   options={"headers": {RAW: "stream"}})
        try:
            ctype = str(resp.headers.get("content-type", ""))
            if "json" in ctype and "event-stream" not in ctype:
                asm.feed_body(self._guard(lambda: resp.read()))
            else:
                for line in self._lines(resp):
                    if asm.feed_line(line):
                        break
        finally:
            resp.close()
        return asm.finish()

    def _guard(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as e:  # transport errors of the SDK's HTTP library
            raise self._broken(e) from e

    def _lines(self, resp: Any) -> Iterator[str]:
        it = iter(resp.iter_lines())
        while True:
            try:
                line = next(it)
            except StopIteration:
                return
            except Exception as e:
                raise self._broken(e) from e
            yield line

    def _broken(self, e: Exception) -> ModelError:
        name = type(e).__name__
        if "Timeout" in name:
            return ModelError(f"the model endpoint {self.endpoint} stopped sending for "
                              f"{self.timeout_s:g}s mid-answer: check the server, or raise the "
                              "request timeout")
        return ModelError(f"the connection to the model endpoint {self.endpoint} broke mid-answer "
                          f"({name}: {_short(e, 120)}); the partial turn was discarded, retry")

    def explain(self, e: Exception) -> ModelError:
        """Map an SDK exception (openai.OpenAIError) to a ModelError saying what to do."""
        openai = sdk.load()

        where, env, model = self.endpoint, self.api_key_env, self.model
        if isinstance(e, openai.APITimeoutError):
            return ModelError(f"the model endpoint {where} did not answer within "
                              f"{self.timeout_s:g}s: check that the server is up, or raise the "
                              "request timeout")
        if isinstance(e, openai.APIConnectionError):
            cause = _short(e.__cause__ or e, 120)
            return ModelError(f"cannot connect to the model endpoint {where} ({cause}): check "
                              "OPENAI_BASE_URL (or the provider's base_url) and that the server "
                              "is running")
        if not isinstance(e, openai.APIStatusError):
            msg = getattr(e, "message", None) or str(e)
            if "api_key" in str(msg):
                return ModelError(f"no API key: set {env}")
            return ModelError(f"model endpoint error: {_short(msg)}")
        status, msg = e.status_code, _short(e.message)
        tries = f"after {self.max_retries} retries" if self.max_retries else "(retries disabled)"
        if status == 401:
            return ModelError(f"model endpoint returned 401 (unauthorized): check {env} ({msg})")
        if status == 403:
            return ModelError(f"model endpoint returned 403 (forbidden): the key in {env} has no "
                              f"access to model `{model}` ({msg})")
        if status == 404:
            if e.code == "model_not_found" or "model" in msg.lower():
                return ModelError(f"model `{model}` was not found at {where}: check the model name "
                                  f"(--model, ZAPCLI_MODEL or `model:` in config.yaml) ({msg})")
            return ModelError(f"model endpoint returned 404 for {where}/chat/completions: check "
                              "OPENAI_BASE_URL (it usually ends in /v1)")
        spent = _spent(e, msg, env) if status == 429 else None
        if spent is not None:
            return spent  # no retry_after: the loop ends at once, waiting helps nothing
        if busy(e.response):
            what = "rate-limiting" if status == 429 else "overloaded"
            return ModelError(f"model endpoint is {what} (HTTP {status}): {msg}",
                              retry_after=retry_after(e.response.headers), status=status)
        if status == 429:
            return ModelError(f"model endpoint is still rate-limiting (429) {tries}: wait and "
                              f"retry, or run fewer subagents at once (max_concurrent) ({msg})")
        if status >= 500:
            return ModelError(f"model endpoint failed with HTTP {status} {tries}: the server is "
                              f"having trouble, retry later ({msg})")
        if status == 400:
            return ModelError(f"model endpoint rejected the request (400): {msg}")
        return ModelError(f"model endpoint returned HTTP {status}: {msg}")
