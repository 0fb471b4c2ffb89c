"""The trail's two JSON paths agree (#12 speed): the standard library's json,
which a command imports in a millisecond, reads and writes what orjson does."""

from __future__ import annotations

import enum
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from zapcli import stdjson
from zapcli.trail import jsonl

LINES = [b'{"v":1,"seq":3,"ts":"2026-12-01T09:00:00.000001Z","type":"text","delta":"h\\u00e9\\n"}',
         b'NaN', b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}', b'"\\ud800"', b'"\\udc00x"',
         b'"\\ud83d\\ude00"', b'"\\\\ud83d"', b'18446744073709551615', b'18446744073709551616',
         b'-9223372036854775808', b'-9223372036854775809', b'1' * 30, b'1e400', b'-1e400', b'1e-400',
         b'\xef\xbb\xbf{}', b' {} ', b'{}\r\n', b'{"a":1,"a":2}', b'1.0', b'1E5', b'-0', b'-0.0', b'"\x01"',
         b'"\t"', b'\x00', b'{}x', b'\xff', b'"\xed\xa0\x80"', b'1.5e-7', b'[1,2,]', b"{'a':1}", b'',
         b'[' * 1100 + b']' * 1100, b'{"a":"\xc3\xa9\xf0\x9f\x98\x80"}', b'true', b'null', b'[1.5,2,"x"]']


def _outcome(fn, arg):
    try:
        value = fn(arg)
    except ValueError:
        return "refused"
    except RecursionError:
        return "recursion"
    return ("nan",) if isinstance(value, float) and math.isnan(value) else (type(value), repr(value))


@pytest.mark.parametrize("line", LINES)
def test_a_line_reads_as_orjson_reads_it(line):
    assert _outcome(jsonl.std_loads, line) == _outcome(orjson.loads, line)


class Mode(str, enum.Enum):
    A = "a"


class Plain(enum.Enum):
    B = 2


@dataclass
class Point:
    x: int


VALUES = [{"v": 1, "seq": 2, "task": "é😀\n\t\"\\", "n": None, "t": True, "l": [1, 2.5, (3, 4)]},
          {"mode": Mode.A, "plain": Plain.B, "p": Path("/x"), "pt": Point(1)}, {"f": math.nan},
          {"f": math.inf}, {"s": "\ud800"}, {"big": 2**63 - 1}, {"u": "\u2028\u007f"}, [], "x", 0.1, -0.0]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_a_value_writes_as_orjson_writes_it(value):
    try:
        want = orjson.loads(orjson.dumps(value, default=str))
    except TypeError:
        with pytest.raises(TypeError):
            jsonl.std_dumps(value)
        return
    assert orjson.loads(jsonl.std_dumps(value)) == want


def _orjson_imported(work: str) -> bool:
    """Whether a fresh interpreter that makes records and runs `work` (with
    `line`, `reader` and `records` at hand) imported orjson."""
    probe = ("import sys; from zapcli.trail import jsonl, records, reader;" + work
             + ";print('orjson' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return out.strip() == "True"


def test_a_command_that_reads_and_writes_a_few_records_never_imports_orjson(tmp_path):
    assert not _orjson_imported(
        "line = records.encode(records.make('spawn', 0, {'task': 't', 'mono': 1.5}), []);"
        "assert reader.parse(line * 3).records[2]['mono'] == 1.5")


def test_a_trail_of_a_few_hundred_kilobytes_is_read_without_orjson(tmp_path):
    """orjson pays for its import (~11 ms: dataclasses, inspect, uuid, json...)
    only from about a megabyte of trail (json's C scanner ~16 ms a MB, orjson
    ~4): a 200 KB trail — an agent's run of some length, read by every merge,
    poll or output of it — is read with json's C half."""
    assert not _orjson_imported(
        "line = records.encode(records.make('event', 0, {'text': 'x' * 1000}), []);"
        "assert len(reader.parse(line * 200).records) == 200")


STD_DECODER = __import__("json").JSONDecoder(parse_int=jsonl._int, parse_float=jsonl._float,
                                             parse_constant=jsonl._constant)
STD_ENCODER = __import__("json").JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                                             default=jsonl._refuse)


def _same(fn, arg):
    """(value, or the exception's type and text) of one call."""
    try:
        value = fn(arg)
    except Exception as exc:  # noqa: BLE001 - the exception itself is what is compared
        return type(exc), str(exc)
    return ("nan",) if isinstance(value, float) and math.isnan(value) else (type(value), repr(value))


TEXTS = [line.decode("utf-8", "replace") for line in LINES] + [
    " ", "\t\n", "  1  ", "1 2", "{} {}", "[1] x", "\n{\"a\": [1, {\"b\": null}]}\r\n", "\f1", "1\f",
    "\u00a01", "\"\\x\"", "{\"a\"}", "[", "\"abc", "1.", "-", "01", "{\"a\":1,}"]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_the_c_scanner_reads_as_the_standard_decoder_reads(text):
    """The trail reads with json's C half alone: the same values, the same errors (type and
    text) as `json.JSONDecoder.decode` with the same options."""
    assert _same(jsonl._decode, text) == _same(STD_DECODER.decode, text)


@pytest.mark.parametrize("value", VALUES + [{"a": {"b": [1, {"c": "d"}]}}, {1: 2, None: 3, 1.5: 4, False: 5},
                                            {(1, 2): 3}, [1, [2, [3]]], 2**70, "\u2028", {"x": b"y"}],
                         ids=range(len(VALUES) + 7))
def test_the_c_encoder_writes_as_the_standard_encoder_writes(value):
    assert _same(jsonl._encode, value) == _same(STD_ENCODER.encode, value)


def test_a_circular_value_is_refused_as_the_standard_encoder_refuses_it():
    loop: list[object] = []
    loop.append(loop)
    assert _same(jsonl._encode, loop) == _same(STD_ENCODER.encode, loop)


def test_a_hot_command_imports_neither_json_nor_re(tmp_path):
    """Reading and writing records takes json's C half only: the `json` package imports `re`."""
    probe = ("import sys; from zapcli import lean; lean.pathlib_alone();"  # as the CLI's entry does
             "from zapcli.trail import jsonl, records, reader;"
             "line = records.encode(records.make('spawn', 0, {'task': 't', 'mono': 1.5}), []);"
             "assert reader.parse(line * 3).records[2]['mono'] == 1.5;"
             "print(sorted(m for m in ('json', 're', 'orjson') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])}).stdout
    assert out.strip() == "[]"


STD_TEXTS = TEXTS + ["{\"K\": \"\\udcff\\u00e9\", \"P\": \"/a b\"}", "NaN", "[Infinity, -Infinity]", "1e5", "12"]


@pytest.mark.parametrize("text", STD_TEXTS, ids=range(len(STD_TEXTS)))
def test_the_standard_read_is_json_loads(text):
    """What `keep_env` wrote reads back as `json.loads` reads it (a spawner's environment)."""
    assert _same(stdjson.loads, text) == _same(__import__("json").loads, text)


@pytest.mark.parametrize("value", VALUES + [{"K": "\udcff\u00e9", "P": "/a b"}, {"x": b"y"}, "\udcff"],
                         ids=range(len(VALUES) + 3))
def test_the_standard_write_is_json_dumps(value):
    """An environment with undecodable bytes (lone surrogates) is kept as `json.dumps` keeps it."""
    want = _same(lambda v: __import__("json").dumps(v).encode(), value)
    assert _same(lambda v: stdjson.dumps(v).encode(), value) == want


def test_a_damaged_line_is_refused_as_json_refuses_it_in_a_process_without_json(tmp_path):
    """The C scanner raises its errors (an unterminated string, a bad escape, a missing
    delimiter) through `json.decoder`, which it finds only when something loaded it: in a
    hot command that never did, a torn trail's last line crashed `poll` with a SystemError."""
    damaged = ['{"type": "text", "text": "torn', '{"a": "bad \\q"}', '{"a": "ctl \x01"}',
               '{"a" 1}', '{"a": 1,}', '[1 2]', '{"a":', '', '"\\ud800"x']
    code = ("import json as _j, sys\nsys.modules.pop('json.decoder', None)\n"
            "sys.modules.pop('json', None)\nsys.modules.pop('json.scanner', None)\n"
            "from zapcli import stdjson\nfor t in _j.loads(sys.stdin.read()):\n"
            "    try:\n        stdjson.loads(t)\n        print('none')\n"
            "    except ValueError as e:\n        print(type(e).__name__, e)\n")
    import json

    probe = subprocess.run([sys.executable, "-c", code], input=json.dumps(damaged), text=True,
                           capture_output=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    said = probe.stdout.splitlines()
    for text, line in zip(damaged, said, strict=True):
        try:
            json.loads(text)
        except ValueError as exc:
            assert line == f"JSONDecodeError {exc}", (text, line)


def test_orjson_half_imported_by_another_thread_is_not_used(monkeypatch):
    """While another thread imports orjson, its module is in `sys.modules`
    already, without its functions yet (Python puts it there first): the
    spawns of one model message, writing their trails at once, failed with
    "partially initialized module 'orjson' has no attribute 'dumps'". A read
    and a write then go through the standard library, with the same result."""
    import types

    value = {"type": "spawn", "task": "caf\u00e9 \U0001f600", "n": [1, 2.5, None, True]}
    whole = jsonl.dumps(value)
    monkeypatch.setitem(sys.modules, "orjson", types.ModuleType("orjson"))  # as mid-import
    assert jsonl.dumps(value) == whole
    assert jsonl.loads(whole) == value
