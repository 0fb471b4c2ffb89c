"""Secrets are masked, also when split across two reads."""

from zapcli.redact import StreamRedactor, mask, secret_values


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
