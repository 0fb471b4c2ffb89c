"""Human output never passes terminal control sequences through."""

from zapcli.render.text import escape_controls


def test_escape_sequences_are_shown_not_executed():
    text = "before\x1b]0;title\x07after\x1b[2J\x00\x9b tab\tnl\n"
    out = escape_controls(text)
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out and "\x9b" not in out
    assert "\\x1b]0;title\\x07" in out and out.endswith("tab\tnl\n")
