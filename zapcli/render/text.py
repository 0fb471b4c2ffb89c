"""Text that is safe to show: terminal control sequences escaped.

Imports only `re`, so the CLI's output module can use it without pulling in
the renderers.
"""

from __future__ import annotations

import re

# C0/C1 controls (ESC, BEL, NUL, CR, ...) and the Unicode bidi overrides that
# can make text read differently from what it is (U+202A-202E, U+2066-2069).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """Show control characters (ESC, BEL, NUL, C1, ...) as `\\xNN`; keep \\n and \\t."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


# Words that differ by where the text is read: a person at the CLI, a model
# calling the tool (MCP, `zapcli call`, another framework), or the model of
# `zapcli run` (whose subagents' approvals the person at the terminal decides).
SURFACES = ("cli", "tool", "run")
_ALT, _SEP = "\x1c", "\x1a"


def alt(cli: str, tool: str, run: str | None = None) -> str:
    """Text spelled per surface; `spell(text, surface)` picks one."""
    return f"{_ALT}{cli}{_SEP}{tool}{_SEP}{tool if run is None else run}{_ALT}"


def spell(text: str, surface: str) -> str:
    """`text` with every `alt(...)` spelled for `surface` (cli, tool or run)."""
    if _ALT not in text:
        return text
    index = SURFACES.index(surface)
    parts = text.split(_ALT)
    for i in range(1, len(parts), 2):
        choices = parts[i].split(_SEP)
        parts[i] = choices[index] if index < len(choices) else choices[0]
    return "".join(parts)
