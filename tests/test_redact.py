"""Secrets are masked, also when split across two reads; a stored task's
references expand only as their spawn recorded them."""

import pytest

from zapcli.redact import (
    StreamRedactor,
    UnrecordedSecret,
    display,
    marked,
    mask,
    secret_values,
    unmark,
)


def test_secret_values_pick_named_long_values():
    env = {"OPENAI_API_KEY": "sk-1234567890", "MY_TOKEN": "short", "PATH": "/usr/bin:/bin:/x",
           "DB_PASSWORD": "hunter2hunter2"}
    assert set(secret_values(env)) == {b"sk-1234567890", b"hunter2hunter2"}


def test_split_secret_is_masked():
    r = StreamRedactor([b"sk-1234567890"])
    out = r.feed(b"token: sk-12345") + r.feed(b"67890 end") + r.finish()
    assert out == b"token: *** end"


def test_mask_longest_first():
    assert mask(b"aaaaaaaaXX", [b"aaaaaaaaXX", b"aaaaaaaa"]) == b"***"


# ------------------------------------------------------------ references (C34)

OPEN, CLOSE = "\ue000", "\ue001"
REF_ENV = {"MY_TOKEN": "sk-tok-0123456789", "OPENAI_API_KEY": "sk-model-abcdefgh", "HOME": "/h"}


def test_marked_names_only_the_references_it_made():
    text, names = marked("curl -H sk-tok-0123456789 x", REF_ENV)
    assert text == f"curl -H {OPEN}MY_TOKEN{CLOSE} x" and names == ["MY_TOKEN"]
    assert unmark(text, REF_ENV, names) == "curl -H sk-tok-0123456789 x"
    assert display(text) == "curl -H *** x"


def test_reference_characters_a_caller_typed_stay_text_whatever_is_recorded():
    typed = f"echo sk-tok-0123456789 {OPEN}MY_TOKEN{CLOSE} {OPEN}OPENAI_API_KEY{CLOSE} {CLOSE}{OPEN}"
    text, names = marked(typed, REF_ENV)
    assert names == ["MY_TOKEN"]
    assert unmark(text, REF_ENV, names) == typed  # exactly as typed: no second value
    assert display(text) == f"echo *** {OPEN}MY_TOKEN{CLOSE} {OPEN}OPENAI_API_KEY{CLOSE} {CLOSE}{OPEN}"


def test_a_reference_its_spawn_did_not_record_is_refused_never_expanded():
    with pytest.raises(UnrecordedSecret):
        unmark(f"echo {OPEN}OPENAI_API_KEY{CLOSE}", REF_ENV, ["MY_TOKEN"])
    with pytest.raises(UnrecordedSecret):  # a trail from before the names were recorded
        unmark(f"echo {OPEN}MY_TOKEN{CLOSE}", REF_ENV)
