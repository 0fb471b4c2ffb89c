"""The fast record encoding (#12 speed) writes the same bytes as the plain one:
timestamps as datetime formats them, a batch as its records one by one."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from zapcli.trail import records

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _epochs() -> list[float]:
    rng = random.Random(12)
    out = [0.0, 1.0, 951782400.0, 1709164800.5, 1767225599.9999996, 1767225599.9999994,
           1700000000 + 0.0078125, 1700000000 + 0.0000005, 4102444800.0]  # ties, leap days, 2100
    out += [rng.uniform(0, 4e9) for _ in range(3000)]
    out += [1.7e9 + i / 1e6 + rng.choice((0.0, 5e-7, 4.9e-7, 5.1e-7)) for i in range(2000)]
    return out


def test_timestamps_are_the_text_datetime_writes():
    for epoch in _epochs():
        assert records.iso_utc(epoch) == datetime.fromtimestamp(epoch, timezone.utc).strftime(FORMAT), epoch


def test_timestamps_read_back_as_datetime_reads_them():
    for epoch in _epochs():
        text = records.iso_utc(epoch)
        want = datetime.strptime(text, FORMAT).replace(tzinfo=timezone.utc).timestamp()
        assert records.parse_iso(text) == want, text


@pytest.mark.parametrize("text", ["2026-02-30T00:00:00.000000Z", "2026-13-01T00:00:00.000000Z",
                                  "2026-01-01T24:00:00.000000Z", "2026-01-01T00:00:60.000000Z",
                                  "2026-01-01 00:00:00.000000Z", "2026-01-01T00:00:00Z", "", "garbage",
                                  "2026-01-01T00:00:00.00000٣Z"])
def test_other_shapes_are_refused_or_read_as_datetime_reads_them(text):
    try:
        want = datetime.strptime(text, FORMAT).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        with pytest.raises(ValueError):
            records.parse_iso(text)
    else:
        assert records.parse_iso(text) == want


@pytest.mark.parametrize("secrets", [[], [b"sk-live-" + b"k" * 32, b"ghp_" + b"t" * 36],
                                     [b"two\nlines-secret"], [b"ab"]])
def test_a_batch_is_its_records_one_by_one(secrets):
    rng = random.Random(3)
    key = secrets[0].decode() if secrets else "none"
    items = []
    for i in range(400):
        kind = rng.choice(["text", "tool_call", "tool_result", "big", "usage"])
        if kind == "tool_result":
            size = rng.choice([10, 4000, 5000, 20000])
            items.append(("tool_result", {"call_id": str(i), "content": ("é" + key) * size}))
        elif kind == "big":
            items.append(("tool_call", {"call_id": str(i), "arguments": {"a": "x" * 70000, "b": key}}))
        elif kind == "usage":
            items.append(("usage", {"input_tokens": i, "output_tokens": 2}))
        else:
            items.append((kind, {"delta": f"word {key} {i}"}))
    timed = [(rtype, fields, 1.7e9 + i * 0.0137) for i, (rtype, fields) in enumerate(items)]
    want = b"".join(records.encode(records.make(rtype, 5 + n, dict(fields), ts), secrets)
                    for n, (rtype, fields, ts) in enumerate(timed, start=1))
    assert records.lines(timed, 5, secrets) == want


def test_a_few_records_are_written_without_loading_orjson(monkeypatch):
    """#32: a shell subagent's runner writes a handful of records; a batch of
    a few is the same bytes through the standard library's json, and orjson
    (~8 ms of the runner's start) is not imported for it."""
    import sys

    monkeypatch.delitem(sys.modules, "orjson", raising=False)
    secret = b"sk-live-" + b"k" * 32
    timed = [("start", {"pid": 7, "note": "caf\u00e9 " + secret.decode()}, 1.7e9 + 0.25),
             ("usage", {"input_tokens": 1}, 1.7e9 + 1.5),
             ("text", {"delta": "x" * 70000}, 1.7e9 + 2.0)]
    got = records.lines(timed, 5, [secret])
    assert "orjson" not in sys.modules
    want = b"".join(records.encode(records.make(rtype, 5 + n, dict(fields), ts), [secret])
                    for n, (rtype, fields, ts) in enumerate(timed, start=1))
    assert got == want
    assert secret not in got and got.count(b"\n") == 3
