"""Record encoding: envelope, timestamps, folding to the size caps, secret masking.

Imports `zapcli.redact`. Caps from SPEC §4: no record over 64 KB (the `spawn`
record, which carries the task of up to 1 MB, is the one exception),
`tool_result.content` folded over 16 KB.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import orjson

from zapcli.redact import mask

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
MAX_RECORD_BYTES = 64 * 1024
TOOL_RESULT_MAX_BYTES = 16 * 1024
UNCAPPED_TYPES = frozenset({"spawn"})


def iso_utc(epoch: float | None = None) -> str:
    """ISO-8601 UTC with microseconds and a `Z`, e.g. 2026-11-30T15:30:00.123456Z."""
    dt = datetime.fromtimestamp(time.time() if epoch is None else epoch, timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> float:
    """Inverse of iso_utc: epoch seconds. Raises ValueError on other shapes."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def fold_text(text: str, limit: int) -> str:
    """Keep about `limit` bytes of `text`: head and tail around a marker saying
    how many bytes were folded. Cuts on character boundaries."""
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
    if rtype == "tool_result" and isinstance(record.get("content"), str):
        record["content"] = fold_text(record["content"], TOOL_RESULT_MAX_BYTES)
    line = mask(orjson.dumps(record, default=str), secrets)
    if rtype not in UNCAPPED_TYPES:
        limit = MAX_RECORD_BYTES // 2
        while len(line) >= MAX_RECORD_BYTES and limit >= 256:
            record = _fold_strings(record, limit)
            line = mask(orjson.dumps(record, default=str), secrets)
            limit //= 2
    return line + b"\n"


def make(rtype: str, seq: int, fields: dict[str, Any], epoch: float | None = None) -> dict[str, Any]:
    """The envelope `{v, seq, ts, type, **fields}`."""
    rec: dict[str, Any] = {"v": SCHEMA_VERSION, "seq": seq, "ts": iso_utc(epoch), "type": rtype}
    rec.update(fields)
    return rec
