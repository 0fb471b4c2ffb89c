"""Text that is safe to show: terminal control sequences escaped.

Imports nothing, so the CLI's output module can use it without pulling in
the renderers.
"""

from __future__ import annotations

# C0/C1 controls (ESC, BEL, NUL, CR, ...) and the Unicode bidi overrides that
# can make text read differently from what it is (U+202A-202E, U+2066-2069),
# each to its escape: a table for str.translate (a regex took ~0.4 ms to compile).
_CONTROL = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")
            for first, last in ((0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), (0x202A, 0x202E), (0x2066, 0x2069))
            for c in range(first, last + 1)}


def escape_controls(text: str) -> str:
    """Show control characters (ESC, BEL, NUL, C1, ...) as `\\xNN`; keep \\n and \\t."""
    return text.translate(_CONTROL)


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
