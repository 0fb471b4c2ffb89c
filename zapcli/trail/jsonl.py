"""JSON for trail lines: the standard library's `json` where a command reads or
writes a few records, orjson where there are many (the batched writer, long trails).

Imports `zapcli.stdjson` (json's C half, without the `json` package and the
`re` it brings); orjson only on demand — its import pulls in dataclasses,
inspect, uuid, datetime and json itself (~10 ms, as much as a whole `poll`).
Where orjson is loaded anyway (the runner) it is used. Both paths give the same answers: what the standard parser would read
differently from orjson (NaN and infinities, integers past 64 bits, escaped
lone surrogates, deep nesting) and what the standard encoder cannot write as
orjson does (types other than JSON's own, NaN, lone surrogates) is handed to
orjson. Numbers may be spelt differently (`1e-07` and `1e-7`); they read the same.
"""

from __future__ import annotations

import sys

from zapcli import stdjson

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# bytes of trail from which orjson's speed pays for its import: json's C scanner
# reads ~16 ms a MB, orjson ~4 ms a MB after an import of ~11 ms (measured on a
# 1.5 MB trail of tool calls; at 64 KB, any agent's run of some length, a merge
# or a poll of it imported orjson to save a millisecond)
BIG = 1024 * 1024
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # orjson reads integers outside as floats


class _Orjson(Exception):
    """This document is for orjson to read or write."""


def _int(text: str) -> int:
    if len(text) > 20:
        raise _Orjson
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise _Orjson
    return value


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Orjson
    return value


def _constant(_text: str) -> Any:
    raise _Orjson  # NaN, Infinity: not JSON; orjson refuses them


class _Options:
    """What `_json`'s scanner reads off a `json.JSONDecoder`: these options."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_int, parse_float, parse_constant = staticmethod(_int), staticmethod(_float), staticmethod(_constant)


_decode = stdjson.decoder(_Options())


def _whole(name: str) -> Any:
    """orjson's function `name` when orjson is loaded, else None. Its module is
    in `sys.modules` from the moment another thread starts importing it, half
    made until that import ends (`spawn`s of one model message write their
    trails at once): a name it does not have yet is as if it were not loaded."""
    return getattr(sys.modules.get("orjson"), name, None)


def loads(line: bytes) -> Any:
    """One JSON document from UTF-8 bytes. Raises ValueError for anything orjson refuses."""
    fast = _whole("loads")  # loaded anyway (the runner): the faster one
    return fast(line) if fast is not None else std_loads(line)


def std_loads(line: bytes) -> Any:
    """`loads` with the standard library's json."""
    if b"\\ud" in line or b"\\uD" in line:  # surrogate escapes: orjson's rules decide
        return _orjson_loads(line)
    try:
        return _decode(line.decode("utf-8"))
    except (_Orjson, RecursionError):
        return _orjson_loads(line)


def _orjson_loads(line: bytes) -> Any:
    import orjson

    return orjson.loads(line)


def loader(size: int) -> Callable[[bytes], Any]:
    """`loads`, or orjson's own for `size` bytes of trail and more."""
    if size < BIG:
        return loads
    import orjson

    return orjson.loads


def _refuse(_value: object) -> Any:
    raise _Orjson


_encode = stdjson.encoder(_refuse, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dumps(value: Any) -> bytes:
    """Compact JSON bytes, as `orjson.dumps(value, default=str)` writes them."""
    fast = _whole("dumps")  # loaded anyway (the runner): the faster one
    return fast(value, default=str) if fast is not None else std_dumps(value)  # type: ignore[no-any-return]


def std_dumps(value: Any) -> bytes:
    """`dumps` with the standard library's json."""
    try:
        return _encode(value).encode("utf-8")
    except (_Orjson, ValueError, RecursionError):  # other types, NaN, lone surrogates
        import orjson

        return orjson.dumps(value, default=str)
