"""Record encoding: envelope, timestamps, folding to the size caps, secret masking.

Imports `zapcli.redact`, `zapcli.trail.jsonl` (orjson for a batch of more than a few). Caps from docs/explanation/rules.md#the-trail: no record over 64 KB (the `spawn`
record, which carries the task of up to 1 MB, is the one exception),
`tool_result.content` folded over 16 KB.
"""

from __future__ import annotations

import sys
import time

from zapcli.redact import MASK, mask
from zapcli.trail import jsonl

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

SCHEMA_VERSION = 1
MAX_RECORD_BYTES = 64 * 1024
TOOL_RESULT_MAX_BYTES = 16 * 1024
UNCAPPED_TYPES = frozenset({"spawn"})
FEW = 8  # records in a batch the standard library's json writes while orjson is not loaded
ISO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

# The "YYYY-MM-DDTHH:MM:SS" of the last whole second formatted: a trail's
# records share it, and strftime is most of a record's encoding cost.
_second: tuple[int, str] = (-1, "")


def iso_utc(epoch: float | None = None) -> str:
    """ISO-8601 UTC with microseconds and a `Z`, e.g. 2026-11-30T15:30:00.123456Z.
    The same text as `datetime.fromtimestamp(epoch, timezone.utc).strftime(ISO_FORMAT)`
    (microseconds rounded half to even), without importing datetime."""
    global _second
    t = time.time() if epoch is None else epoch
    if not 0 <= t < 253402300799:  # year 9999: leave odd values to datetime
        from datetime import datetime, timezone

        return datetime.fromtimestamp(t, timezone.utc).strftime(ISO_FORMAT)
    whole = int(t)
    micros = round((t - whole) * 1e6)  # t - whole is exact, as modf's fraction
    if micros >= 1_000_000:
        whole += 1
        micros -= 1_000_000
    cached = _second
    if cached[0] != whole:
        cached = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{cached[1]}.{micros:06d}Z"


_DAYS_BEFORE_MONTH = (0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


def parse_iso(text: str) -> float:
    """Inverse of iso_utc: epoch seconds. Raises ValueError on other shapes.
    The shape iso_utc writes is read without datetime; anything else goes to
    `datetime.strptime` (which decides what else it accepts)."""
    if (len(text) == 27 and text[4] == text[7] == "-" and text[10] == "T" and text[13] == text[16] == ":"
            and text[19] == "." and text[26] == "Z"):
        digits = text[0:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19] + text[20:26]
        if digits.isdigit() and digits.isascii():
            y, mo, d = int(text[0:4]), int(text[5:7]), int(text[8:10])
            h, mi, s, us = int(text[11:13]), int(text[14:16]), int(text[17:19]), int(text[20:26])
            leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
            month_days = 29 if mo == 2 and leap else (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[mo % 13]
            if y >= 1 and 1 <= mo <= 12 and 1 <= d <= month_days and h < 24 and mi < 60 and s < 60:
                days = _days_since_epoch(y, mo, d, leap)
                return ((days * 86400 + h * 3600 + mi * 60 + s) * 10**6 + us) / 10**6
    from datetime import datetime, timezone

    return datetime.strptime(text, ISO_FORMAT).replace(tzinfo=timezone.utc).timestamp()


def _days_since_epoch(y: int, mo: int, d: int, leap: bool) -> int:
    """Days from 1970-01-01 to y-mo-d (proleptic Gregorian, as datetime counts)."""
    p = y - 1
    ordinal = p * 365 + p // 4 - p // 100 + p // 400 + _DAYS_BEFORE_MONTH[mo] + (mo > 2 and leap) + d
    return ordinal - 719163  # date(1970, 1, 1).toordinal()


def fold_text(text: str, limit: int) -> str:
    """Keep about `limit` bytes of `text`: head and tail around a marker saying
    how many bytes were folded. Cuts on character boundaries."""
    if len(text) * 4 <= limit:  # no character is more than 4 bytes: nothing to fold
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    half = max(limit // 2 - 40, 16)
    head = raw[:half].decode("utf-8", "ignore")
    tail = raw[-half:].decode("utf-8", "ignore")
    folded = len(raw) - len(head.encode()) - len(tail.encode())
    return f"{head}\n…[{folded} bytes folded]…\n{tail}"


def _fold_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return fold_text(value, limit)
    if isinstance(value, dict):
        return {k: _fold_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_fold_strings(v, limit) for v in value]
    return value


def encode(record: dict[str, Any], secrets: list[bytes]) -> bytes:
    """One JSONL line (with its newline), masked and within the size cap."""
    rtype = record.get("type")
    if rtype == "tool_result":
        content = record.get("content")
        if isinstance(content, str) and len(content) * 4 > TOOL_RESULT_MAX_BYTES:
            record["content"] = fold_text(content, TOOL_RESULT_MAX_BYTES)
    line = jsonl.dumps(record)
    for secret in secrets:  # `mask`, inline: this runs once per record
        if secret in line:
            line = line.replace(secret, MASK)
    if len(line) >= MAX_RECORD_BYTES and rtype not in UNCAPPED_TYPES:
        limit = MAX_RECORD_BYTES // 2
        while len(line) >= MAX_RECORD_BYTES and limit >= 256:
            record = _fold_strings(record, limit)
            line = mask(jsonl.dumps(record), secrets)
            limit //= 2
    return line + b"\n"


def make(rtype: str, seq: int, fields: dict[str, Any], epoch: float | None = None) -> dict[str, Any]:
    """The envelope `{v, seq, ts, type, **fields}`."""
    return {"v": SCHEMA_VERSION, "seq": seq, "ts": iso_utc(epoch), "type": rtype, **fields}


def lines(items: Iterable[tuple[str, dict[str, Any], float]], seq: int, secrets: list[bytes]) -> bytes:
    """The batched writer's `encode(make(rtype, seq + n, fields, ts))` for each
    of `items`, numbered from `seq + 1`, one after the other: the same bytes,
    with the per-record work inlined (it is most of a trail's cost).

    Secrets are masked over the whole batch at once, which is the same as line
    by line (orjson never writes a newline inside a line, so a secret without
    one cannot match across two) and several times faster. Each line is copied
    into one buffer right away: keeping thousands of orjson's outputs alive
    costs more than the copy.

    A batch of a few records, while orjson is not loaded (a shell subagent's
    runner writes a handful in its life), goes through `encode` with the
    standard library's json: orjson's import (dataclasses, inspect, uuid,
    datetime: ~8 ms) would cost more than it saves."""
    if "orjson" not in sys.modules:
        items = list(items)
        if len(items) <= FEW:
            return b"".join(encode(make(rtype, seq + n, fields, ts), secrets)
                            for n, (rtype, fields, ts) in enumerate(items, 1))
    import orjson  # the batched writer: many records

    global _second
    bulk = all(len(secret) >= len(MASK) and b"\n" not in secret for secret in secrets)
    done: list[bytes] = []  # masked pieces
    out = bytearray()
    dumps, newline, version = orjson.dumps, orjson.OPT_APPEND_NEWLINE, SCHEMA_VERSION
    second, prefix = _second  # `second` is only ever a valid one (iso_utc caches no other)
    for rtype, fields, ts in items:
        seq += 1
        whole = int(ts)
        micros = round((ts - whole) * 1e6)
        if whole != second or micros >= 1_000_000:
            stamp = iso_utc(ts)  # a new second (or an odd value): the full path, which caches
            second, prefix = _second
        else:
            stamp = f"{prefix}.{micros:06d}Z"
        record = {"v": version, "seq": seq, "ts": stamp, "type": rtype, **fields}
        if rtype == "tool_result":
            content = record.get("content")
            if isinstance(content, str) and len(content) * 4 > TOOL_RESULT_MAX_BYTES:
                record["content"] = fold_text(content, TOOL_RESULT_MAX_BYTES)
        data = dumps(record, default=str, option=newline)
        if bulk and len(data) <= MAX_RECORD_BYTES:  # masking only shortens it: no cap to apply
            out += data
            continue
        done += (_masked(out, secrets), encode(record, secrets))  # the whole path, line by line
        out = bytearray()
    done.append(_masked(out, secrets))
    return done[0] if len(done) == 1 else b"".join(done)


def _masked(data: bytearray, secrets: list[bytes]) -> bytes:
    """`mask` over a buffer of whole lines, without copying it first."""
    for secret in secrets:
        if secret in data:
            data = data.replace(secret, MASK)
    return data  # type: ignore[return-value]  # bytes-like: written with os.write


def line(rtype: str, seq: int, fields: dict[str, Any], epoch: float | None, secrets: list[bytes]) -> bytes:
    """`encode(make(...))`: one record's line."""
    return encode(make(rtype, seq, fields, epoch), secrets)
