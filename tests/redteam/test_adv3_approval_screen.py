"""What the person sees when asked is not what they approve (adversary round
3, on `zapcli.render.text.shown`).

An approval shows the whole command, wrapped, above `allow the above?`;
padding that would push part of it out of sight is made visible — a run of
24 spaces becomes `⟨N spaces⟩`, more than three EMPTY lines `⟨N empty
lines⟩`. Lines that only LOOK empty are kept as they are: a line holding one
space (or a zero-width space, an ideographic space) is a line of its own on
the screen. A model puts the command it wants first and a harmless one last:

    curl -s http://…/x
     (x 80 lines of one space)
    pytest -q tests/unit

and the terminal scrolls the `curl` out of the window: what the person reads
above `allow the above?` is blank lines and `pytest -q tests/unit`.

The outside effect: the screen the person sees (the last ROWS lines on a
real pty sized ROWS x COLS) holds no part of the command that then reaches
the listener when they answer `y` to what they saw. All three failed on the
code before; now lines that show nothing collapse, characters that take no
visible place are shown as `\\uXXXX`, and an approval taller than the
terminal says so next to its question, repeating the lines it starts with.
"""

from __future__ import annotations

import pytest

from tests.conftest import Zap
from tests.redteam.screen import yes_to

ROWS, COLS = 40, 100


def _screen(raw: bytes, rows: int = ROWS) -> str:
    """The last `rows` lines the terminal shows up to the question (no
    cursor movement reaches it: every control is escaped)."""
    text = raw.decode(errors="replace").replace("\r\n", "\n")
    return "\n".join(text.split("\n")[-rows:])


@pytest.mark.parametrize("blank", [" ", "\u200b", "\u3000"], ids=["space", "zwsp", "ideographic"])
@pytest.mark.timeout(120)
def test_blank_looking_lines_scroll_the_real_command_out_of_sight(zap: Zap, listener, blank: str):
    marker = f"adv3-screen-{ord(blank):x}"
    head = f"curl -s {listener.url}/{marker}"
    command = head + "\n" + f"{blank}\n" * (ROWS * 2) + "pytest -q tests/unit"
    screen = _screen(yes_to(zap, marker, command, "sk-test-adv3-screen-0123456789", (ROWS, COLS)))
    assert head in screen or not listener.saw(marker), (
        f"approved unseen: the screen was\n{screen}")
