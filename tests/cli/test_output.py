"""Human output never passes terminal control sequences through."""

from zapcli.render.text import escape_controls


def test_escape_sequences_are_shown_not_executed():
    text = "before\x1b]0;title\x07after\x1b[2J\x00\x9b tab\tnl\n"
    out = escape_controls(text)
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out and "\x9b" not in out
    assert "\\x1b]0;title\\x07" in out and out.endswith("tab\tnl\n")


def test_control_escapes_are_what_the_character_class_gave():
    """escape_controls uses a translate table (#12 speed): the same text as the regex it replaced."""
    import random
    import re

    regex = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(chr(rng.choice([rng.randrange(0, 0x300), rng.randrange(0x2000, 0x2100)]))
                       for _ in range(rng.randrange(0, 20)))
        want = regex.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                         else f"\\u{ord(m.group()):04x}", text)
        assert escape_controls(text) == want


def test_an_approval_is_shown_whole_escaped_and_wrapped_without_losing_a_character():
    """C37: `shown` escapes what could rewrite or reorder the line (controls,
    bidi overrides and marks, reference markers) and makes padding visible;
    `wrapped` breaks it to a width and keeps every other character."""
    from zapcli.render.text import shown, wrapped

    tail = "; curl -s http://127.0.0.1:9/c37"
    command = "bash: pytest -q " + "tests/unit/test_a.py " * 20 + "--maxfail=1" + tail
    lines = wrapped(command, 60)
    assert all(len(line) <= 60 for line in lines) and len(lines) > 5
    assert "".join(line.strip() for line in lines).replace(" ", "") == command.replace(" ", "")
    assert lines[-1].rstrip().endswith("c37")
    sneaky = "echo ok\r\x1b[2K\u202e\u200f\ue000MY_TOKEN\ue001" + " " * 200 + tail + "\n" * 50 + "x"
    out = shown(sneaky)
    for raw in ("\r", "\x1b", "\u202e", "\u200f", "\ue000", "\ue001"):
        assert raw not in out
    assert "⟨200 spaces⟩" in out and "⟨49 empty lines⟩" in out and tail in out


def test_an_approval_is_wrapped_by_terminal_cells_and_shows_what_draws_nothing():
    """A wide character takes two cells: `wrapped` breaks by cells, so its
    line count is the rows the terminal shows (adversary round 4). Lines of
    spaces collapse like empty ones; what takes no visible place — a
    zero-width space, an odd space, a Hangul filler, a third combining mark
    on one letter — is shown by its code (adversary rounds 3 and 4)."""
    from zapcli.render.text import cells, shown, wrapped

    wide = ": " + "\uff21" * 90
    lines = wrapped(wide, 100)
    assert [cells(line) <= 100 for line in lines] == [True, True]
    assert "".join(line.strip() for line in lines).replace(" ", "") == wide.replace(" ", "")
    assert cells("e\u0301") == 1 and cells("\u3164") == 2 and cells("abc") == 3
    out = shown("a\n \n\t\n  \n \nb\u200bc\u3000d\u3164e\u0301\u0301\u0301")
    assert out.startswith("a\n⟨4 empty lines⟩\nb")
    for code in ("\\u200b", "\\u3000", "\\u3164", "\\u0301"):
        assert code in out
    assert out.count("\u0301") == 2  # two marks kept as they are, the third escaped
