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


def test_a_command_that_reads_and_writes_a_few_records_never_imports_orjson(tmp_path):
    probe = ("import sys; from zapcli.trail import jsonl, records, reader;"
             "line = records.encode(records.make('spawn', 0, {'task': 't', 'mono': 1.5}), []);"
             "assert reader.parse(line * 3).records[2]['mono'] == 1.5;"
             "print('orjson' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
