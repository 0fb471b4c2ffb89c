"""A model call's tokens, counted once whatever shape its provider reports
them in: the fields of zapcli's `usage` record (docs/explanation/rules.md#the-trail, docs/explanation/rules.md#tokens).

Imports nothing. zapcli's figures: `input_tokens` are every prompt token —
those read from the provider's cache (`cached_tokens`) and written to it
(`cache_write_tokens`) included — and `output_tokens` every generated one,
reasoning (`reasoning_tokens`) included. Providers say the same call in
three shapes, and each parser names the one it reads:

- OpenAI (Chat Completions, Responses, and the endpoints that copy them):
  the cache's tokens are part of the prompt's, reasoning part of the
  completion's (`openai`).
- Anthropic: the cache's reads and writes are beside the input, not in it;
  thinking is part of the output (`anthropic`).
- Gemini: the cache is part of the prompt, thoughts beside the candidates
  (`gemini`).
- A CLI that splits every part apart (opencode, pi: uncached input, output
  without reasoning, reasoning, cache reads, cache writes) is summed
  (`parts`).

Every surface — `usage`, `poll`, the ledger, the OpenTelemetry spans
(`gen_ai.usage.input_tokens` holds the cache reads), ATIF — reads these
fields, so each shows the same call the same way.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _n(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and value > 0 else 0


def fields(model: str | None, input_tokens: int, output_tokens: int, cached: int = 0,
           cache_write: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """The `usage` record's fields, from counts already in zapcli's terms."""
    out: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens,
                           "cached_tokens": cached}
    if model:
        out = {"model": model, **out}
    if cache_write:
        out["cache_write_tokens"] = cache_write
    if reasoning:
        out["reasoning_tokens"] = reasoning
    return out


def openai(model: str | None, prompt: Any, completion: Any, cached: Any = 0,
           reasoning: Any = 0, cache_write: Any = 0) -> dict[str, Any]:
    """OpenAI's shape: `cached` (and a gateway's `cache_write`) within
    `prompt`, `reasoning` within `completion`."""
    return fields(model, _n(prompt), _n(completion), _n(cached), _n(cache_write), _n(reasoning))


def anthropic(model: str | None, input_tokens: Any, output_tokens: Any, cache_read: Any = 0,
              cache_write: Any = 0) -> dict[str, Any]:
    """Anthropic's shape: cache reads and writes beside `input_tokens`."""
    read, write = _n(cache_read), _n(cache_write)
    return fields(model, _n(input_tokens) + read + write, _n(output_tokens), read, write)


def gemini(model: str | None, prompt: Any, candidates: Any, thoughts: Any = 0, cached: Any = 0,
           total: Any = None) -> dict[str, Any]:
    """Gemini's shape: `cached` within `prompt`, `thoughts` beside
    `candidates` (billed as output). Where only the `total` says the
    thoughts, they are what it holds beyond prompt and candidates."""
    thought = _n(thoughts)
    if not thought and total is not None:
        thought = max(_n(total) - _n(prompt) - _n(candidates), 0)
    return fields(model, _n(prompt), _n(candidates) + thought, _n(cached), 0, thought)


def parts(model: str | None, uncached: Any, output: Any, reasoning: Any = 0, cache_read: Any = 0,
          cache_write: Any = 0) -> dict[str, Any]:
    """Every part apart: input without the cache's, output without reasoning."""
    read, write, thought = _n(cache_read), _n(cache_write), _n(reasoning)
    return fields(model, _n(uncached) + read + write, _n(output) + thought, read, write, thought)


def spent(record: dict[str, Any]) -> tuple[int, float | None]:
    """(input + output tokens, dollars or None) of one `usage` record."""
    cost = record.get("cost_usd")
    return (_n(record.get("input_tokens")) + _n(record.get("output_tokens")),
            float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None)
