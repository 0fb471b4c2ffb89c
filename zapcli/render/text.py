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


_C_ESCAPES = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}


def git_quoted(path: str) -> str:
    """`path` as git prints a file name (`git diff --name-only`, `--stat`;
    core.quotePath's default): as it is when plain, else in double quotes with
    C escapes (`"a\\nb"`, octal for other controls and non-ASCII bytes). One
    name is one line, whatever its bytes: a name a subagent chose with a newline
    in it never reads as two names to `| xargs` or `| while read`."""
    raw = path.encode("utf-8", "surrogateescape")
    if not any(b < 0x20 or b >= 0x7F or b in (34, 92) for b in raw):
        return path
    out = []
    for b in raw:
        if b in _C_ESCAPES:
            out.append("\\" + _C_ESCAPES[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def escape_controls(text: str) -> str:
    """Show control characters (ESC, BEL, NUL, C1, ...) as `\\xNN`; keep \\n and \\t."""
    return text.translate(_CONTROL)


# What an approval shows (`shown`): the controls above, and the characters that
# change how the rest reads without being seen themselves — the bidi marks
# (U+061C, U+200E, U+200F) and the markers of a stored secret reference
# (U+E000, U+E001), so a person never approves a reference they cannot see.
_SHOWN = {**_CONTROL, **{c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, 0xE000, 0xE001)}}
PADDING = 24  # a run of this many spaces (or 3 empty lines) is shown by its length


def _unseen(text: str) -> str:
    """`text` with every character that takes no visible place escaped as
    `\\uXXXX`: the invisible format characters (zero-width spaces and
    joiners, word joiners, soft hyphens: Unicode's Cf), every space or
    separator but the ASCII space (U+3000, U+00A0, U+2028, ...: Zs, Zl, Zp),
    the letters fonts draw blank (the Hangul fillers, the blank Braille
    pattern), and a combining mark past the second on one character (marks
    stacked to draw over the lines around)."""
    if text.isascii():
        return text
    import unicodedata

    out: list[str] = []
    marks = 0
    for c in text:
        if unicodedata.combining(c):
            marks += 1
            out.append(c if marks <= MARKS else f"\\u{ord(c):04x}")
            continue
        marks = 0
        out.append(f"\\u{ord(c):04x}" if c != " " and (
            c in _BLANK or unicodedata.category(c) in _UNSEEN) else c)
    return "".join(out)


_UNSEEN = frozenset({"Cf", "Zs", "Zl", "Zp"})
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800")  # letters and a symbol drawn as nothing
MARKS = 2  # combining marks shown on one character; more are escaped


def shown(text: str) -> str:
    """`text` as an approval shows it: whole, every line kept; controls,
    bidi overrides and marks, reference markers and characters that take no
    visible place escaped; a long run of spaces or of lines that show
    nothing (empty, or spaces and tabs only: padding that pushes a tail out
    of sight) shown as `⟨N spaces⟩` / `⟨N empty lines⟩`."""
    text = _unseen(text.translate(_SHOWN))
    if " " * PADDING in text:
        import re

        text = re.sub(f" {{{PADDING},}}", lambda m: f" ⟨{len(m.group())} spaces⟩ ", text)
    if text.count("\n") > 3:
        import re

        text = re.sub(r"\n(?:[ \t]*\n){3,}",
                      lambda m: f"\n⟨{m.group().count(chr(10)) - 1} empty lines⟩\n", text)
    return text


def cells(text: str) -> int:
    """How many terminal cells `text` takes: a wide character (CJK,
    fullwidth forms) two, a combining mark none, any other one."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def _fits(line: str, room: int) -> int:
    """How many characters of `line` fit in `room` cells (at least one)."""
    if line.isascii():
        return max(min(len(line), room), 1)
    used = 0
    for i, c in enumerate(line):
        used += cells(c)
        if used > room:
            return max(i, 1)
    return len(line)


def wrapped(text: str, width: int, indent: str = "  ") -> list[str]:
    """`shown(text)` as lines of at most `width` terminal cells (a wide
    character takes two), each starting with `indent` (a continuation with
    one more), broken at a space where one is near: nothing is cut, however
    long. So the count of lines is the count of rows the terminal shows."""
    room = max(width - len(indent) - 2, 20)
    out: list[str] = []
    for line in shown(text).split("\n"):
        first = True
        while True:
            lead = indent if first else indent + "  "
            if cells(line) <= room:
                out.append(lead + line)
                break
            fit = _fits(line, room)
            cut = line.rfind(" ", fit // 2, fit)
            cut = cut + 1 if cut > 0 else fit
            out.append(lead + line[:cut])
            line, first = line[cut:], False
    return out


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


def counted(n: int, noun: str) -> str:
    """`1 trail`, `2 trails`: a count and its noun, plural as English makes it with -s."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
