"""An approval's height is counted in characters, the terminal's in cells
(adversary round 4, on `zapcli.cli.output.ask_approval` /
`zapcli.render.text.wrapped`).

Round 3 made a tall approval say so beside its question, repeating the
lines it starts with, when `len(wrapped(summary))` lines do not fit the
terminal's rows. `wrapped` breaks a line at `len(line)` characters, though,
and a wide character (CJK, fullwidth forms, U+3164 HANGUL FILLER, which
most fonts draw blank) takes two cells: a line of 90 of them is one line to
`wrapped` and two rows on a 100-column terminal. So a command of

    curl -s http://…/x
    : ＡＡＡ… (or ㅤㅤㅤ…: blank-looking)   x 30 lines
    pytest -q tests/unit

is 32 lines to zapcli (no warning on a 40-row terminal) and 62 rows to the
terminal, which scrolls the `curl` out of the window: the person answers
`y` to `: …` lines and `pytest`.

The outside effect: the screen (the last ROWS rows a real pty of ROWS x
COLS shows, wide characters taking two cells) holds no part of the command
that reaches the listener when the person answers `y`. Both failed on the
code before; `wrapped` now measures in terminal cells, and the fillers fonts
draw blank are shown as `\\uXXXX`.
"""

from __future__ import annotations

import unicodedata

import pytest

from tests.conftest import Zap
from tests.redteam.screen import yes_to

ROWS, COLS = 40, 100


def _cells(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
               for c in line)


def _screen(raw: bytes, rows: int = ROWS, cols: int = COLS) -> str:
    """The last `rows` rows the terminal shows: each line takes as many rows
    as its cells need (a wide character is two cells)."""
    shown: list[str] = []
    for line in raw.decode(errors="replace").replace("\r\n", "\n").split("\n"):
        row, width = "", 0
        for c in line:
            w = _cells(c)
            if width + w > cols:
                shown.append(row)
                row, width = "", 0
            row, width = row + c, width + w
        shown.append(row)
    return "\n".join(shown[-rows:])


@pytest.mark.parametrize("wide", ["\uff21", "\u3164"], ids=["fullwidth", "hangul-filler"])
@pytest.mark.timeout(120)
def test_wide_lines_scroll_the_real_command_out_of_sight_unwarned(zap: Zap, listener, wide: str):
    marker = f"adv4-width-{ord(wide):x}"
    head = f"curl -s {listener.url}/{marker}"
    filler = f": {wide * 90}\n"
    command = head + "\n" + filler * 30 + "pytest -q tests/unit"
    screen = _screen(yes_to(zap, marker, command, "sk-test-adv4-width-0123456789", (ROWS, COLS)))
    assert head in screen or not listener.saw(marker), (
        f"approved unseen: the screen was\n{screen}")
