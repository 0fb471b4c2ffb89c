"""What a model call costs, in US dollars (docs/explanation/rules.md#budgets), when its backend does
not report it (claude does): a `prices:` entry in config.yaml, else the
`genai-prices` library (pydantic's price database, shipped with the package:
no network). Imports only the standard library and
`zapcli.remembered_prices`; `genai_prices` (~0.2 s, ~3.5 MB) only when a
price is looked up there that no earlier process remembered (a model with
tiers or dated prices always), so in a fleet the first runner to price a
model and a spawn with `--max-cost` pay for it.

`prices:` maps a model name to USD per million tokens:
`{my-model: {input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75}}`.
"""

from __future__ import annotations

from zapcli import remembered_prices as remembered

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
_LIBRARY: dict[str, bool] = {}  # model -> the library knows it
_PLAIN: dict[str, Mapping[str, float]] = {}  # model -> its price, remembered (no library)


def check_prices(value: Any) -> dict[str, dict[str, float]]:
    """The `prices:` config key, checked; raises ValueError saying what is wrong."""
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of model name to {input, output, cache_read, "
                         "cache_write} in USD per million tokens")
    out: dict[str, dict[str, float]] = {}
    for model, entry in value.items():
        where = f"prices.{model}"
        if not isinstance(entry, dict) or "input" not in entry or "output" not in entry:
            raise ValueError(f"{where}: expected {{input, output}} (USD per million tokens), "
                             f"e.g. {{input: 3.0, output: 15.0}}")
        for key, amount in entry.items():
            if key not in PRICE_KEYS:
                raise ValueError(f"unknown key {where}.{key} (valid: {', '.join(PRICE_KEYS)})")
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount >= 0:
                raise ValueError(f"{where}.{key}: expected a number of dollars, 0 or more, "
                                 f"got {amount!r}")
        out[str(model)] = {k: float(v) for k, v in entry.items()}
    return out


def configured(model: str | None, prices: Mapping[str, Any] | None) -> dict[str, float] | None:
    """The `prices:` entry for `model` (its full name, or the part after a
    `provider/` prefix), or None."""
    if not model or not prices:
        return None
    for name in (model, model.partition("/")[2]):
        if name and isinstance(prices.get(name), dict):
            return dict(prices[name])
    return None


def _bare(model: str) -> str:
    return model.rpartition("/")[2] if "/" in model else model


def known(model: str | None, price: Mapping[str, float] | None = None) -> bool:
    """Whether a call of `model` can be priced (a `prices:` entry, or the library)."""
    if price is not None:
        return True
    if not model:
        return False
    return cost(model, 1000, 1000) is not None


def cost(model: str, input_tokens: int, output_tokens: int, cached_tokens: int = 0,
         cache_write_tokens: int = 0, price: Mapping[str, float] | None = None) -> float | None:
    """Dollars for one call (`input_tokens` include the cache's), or None when
    no price is known for the model."""
    if price is not None:
        plain = max(input_tokens - cached_tokens - cache_write_tokens, 0)
        total = (plain * price.get("input", 0.0) + output_tokens * price.get("output", 0.0)
                 + cached_tokens * price.get("cache_read", price.get("input", 0.0))
                 + cache_write_tokens * price.get("cache_write", price.get("input", 0.0)))
        return round(total / 1e6, 10)
    if _LIBRARY.get(model) is False:
        return None
    if model not in _LIBRARY:  # not asked yet in this process: what an earlier one learnt
        kept = remembered.look(model)
        if kept is None:
            _LIBRARY[model] = False
            return None
        if kept is not remembered.MISS:
            _PLAIN[model] = kept
    if model in _PLAIN:
        return cost(model, input_tokens, output_tokens, cached_tokens, cache_write_tokens,
                    price=_PLAIN[model])
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # not installed: only `prices:` entries are known
        return None
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                  cache_read_tokens=cached_tokens, cache_write_tokens=cache_write_tokens)
    first = not _LIBRARY
    try:
        for ref in dict.fromkeys((model, _bare(model))):
            try:
                found = calc_price(usage, ref)
            except (LookupError, ValueError):
                continue
            if model not in _LIBRARY:
                remembered.keep(model, ref)
            _LIBRARY[model] = True
            return round(float(found.total_price), 10)
        remembered.keep(model, None)
        _LIBRARY[model] = False
        return None
    finally:
        if first:
            _give_back()


def _give_back() -> None:
    """Hand the heap's free pages back to the system (glibc's `malloc_trim`),
    after the first look-up in the library: its database is a module of
    ~1.6 MB of source, whose code is run once and dropped, leaving ~1.2 MB of
    free heap a runner would hold for the rest of its run. Nothing where the
    C library has no such call."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to do
        pass


def unknown_message(model: str | None, config_file: str = "config.yaml") -> str:
    """What to do when `--max-cost` meets a model with no known price;
    `config_file`: where the person's config.yaml is (or would be)."""
    name = model or "MODEL"
    return (f"no price is known for model `{name}`, so --max-cost cannot be held: add its price "
            f"to {config_file} (prices: {{{name}: {{input: 3.0, output: 15.0}}}}, USD per "
            "million tokens; cache_read and cache_write too if it caches), pick a model the "
            "genai-prices library knows, or use --max-tokens instead")
