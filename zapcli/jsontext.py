"""JSON text that is safe to print or to read raw. Imports nothing (a
kernel module: the CLI's output, `replay --raw` and telemetry's files all
write JSON a model's text is in).

orjson escapes the C0 controls but leaves DEL, the C1 controls (U+0080 to
U+009F: CSI U+009B is ESC [ to many terminals) and the bidi overrides
(U+202A to U+202E, U+2066 to U+2069: they reorder what a reader sees) as
they are. `escape_json` writes those as \\u escapes, the same characters
`zapcli.render.text.escape_controls` escapes in human text.
"""

from __future__ import annotations

# DEL, C1 and the bidi overrides, as UTF-8: the starts to look for
_JSON_RAW = (b"\x7f", b"\xc2", b"\xe2\x80", b"\xe2\x81")
_json_pattern = None


def escape_json(data: bytes) -> bytes:
    """UTF-8 JSON with DEL, C1 controls and bidi overrides written as
    `\\uXXXX`: the same document to a parser, nothing a terminal or a reader
    of the raw text acts on. These bytes occur only inside JSON strings, where
    such an escape is always valid."""
    global _json_pattern
    if not any(b in data for b in _JSON_RAW):
        return data
    if _json_pattern is None:
        import re

        _json_pattern = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")
    return _json_pattern.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), data)
