"""The standard library's JSON without the `json` package: its C half, `_json`.

Imports nothing (`json` only where `_json` is missing, and to raise its
`JSONDecodeError`). `import json` imports `re` and its compiler for json's
pure-Python fallbacks, ~3 ms of every hot command that reads or writes a
little JSON (`list`, `spawn`, `poll`, a runner). The C scanner and encoder
here are the ones `json.JSONDecoder.decode` and `json.JSONEncoder.encode`
call, called the way those methods call them: the same values, the same
text, the same errors (tests/trail/test_jsonl.py compares them).
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

SPACE = " \t\n\r"  # JSON's whitespace: what `json.JSONDecoder.decode` skips around a document


class Standard:
    """`json.JSONDecoder()`'s own options (what `json.loads` reads with); a
    caller's options are a class like it."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_int, parse_float = int, float
    parse_constant = staticmethod({"-Infinity": float("-inf"), "Infinity": float("inf"),
                                   "NaN": float("nan")}.__getitem__)


def decoder(options: object) -> Callable[[str], Any]:
    """`json.JSONDecoder(parse_int=..., parse_float=..., parse_constant=...).decode`
    with `options`' three: json's C scanner with the decoder's own steps
    around it, else json's own decoder."""
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without json's C half
        import json

        return json.JSONDecoder(**{k: getattr(options, k) for k in ("parse_int", "parse_float",
                                                                    "parse_constant")}).decode
    scan = make_scanner(options)  # type: ignore[arg-type]  # any object with the decoder's options

    def decode(text: str) -> Any:
        start = len(text) - len(text.lstrip(SPACE))
        try:
            value, end = scan(text, start)
        except StopIteration as err:
            from json import JSONDecodeError

            raise JSONDecodeError("Expecting value", text, err.value) from None
        except SystemError:  # the C scanner raises its other errors through `json.decoder`,
            import json  # which it finds only when loaded (else it fails without an exception)

            return json.loads(text)  # its own JSONDecodeError, with the scanner's message
        if end != len(text) and text[end:].strip(SPACE):
            from json import JSONDecodeError

            raise JSONDecodeError("Extra data", text, len(text) - len(text[end:].lstrip(SPACE)))
        return value

    return decode


def encoder(default: Callable[[Any], Any], *, ensure_ascii: bool, allow_nan: bool,
            separators: tuple[str, str]) -> Callable[[Any], str]:
    """`json.JSONEncoder(default=..., ensure_ascii=..., allow_nan=...,
    separators=...).encode`: json's C encoder called as that method calls it,
    else json's own encoder."""
    item, key = separators
    try:
        from _json import encode_basestring, encode_basestring_ascii, make_encoder
    except ImportError:  # an interpreter without json's C half
        import json

        return json.JSONEncoder(default=default, ensure_ascii=ensure_ascii, allow_nan=allow_nan,
                                separators=separators).encode
    strings = encode_basestring_ascii if ensure_ascii else encode_basestring

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return strings(value)  # type: ignore[no-any-return]
        return "".join(make_encoder({}, default, strings, None, key, item, False, False, allow_nan)(value, 0))

    return encode


def _not_serializable(value: object) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


_decode = decoder(Standard())
_encode = encoder(_not_serializable, ensure_ascii=True, allow_nan=True, separators=(", ", ": "))


def loads(text: str) -> Any:
    """`json.loads(text)` of a str."""
    if text.startswith("\ufeff"):
        from json import JSONDecodeError

        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _decode(text)


def dumps(value: Any) -> str:
    """`json.dumps(value)`: ASCII, escapes kept (the lone surrogates of an
    environment's undecodable bytes survive)."""
    return _encode(value)
