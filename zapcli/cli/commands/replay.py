"""`zapcli replay`: render a trail record by record (or print it raw)."""

from __future__ import annotations

import sys

import orjson

from zapcli.cli.output import emit, emit_bytes
from zapcli.jsontext import escape_json
from zapcli.ops.replay import replay
from zapcli.render import replay as render


def execute(id: str, raw: bool = False, since: int | None = None, json: bool = False) -> int:
    res = replay(id, since=since)
    if raw and not json:
        emit_bytes(escape_json(b"".join(orjson.dumps(e) + b"\n" for e in res.entries
                                        if isinstance(e, dict))))
    else:
        emit(json, render.doc, render.lines, res)
    if res.torn_tail_bytes and not json:
        sys.stderr.write("zapcli: note: 1 incomplete record at the end of the trail was ignored "
                         f"({res.torn_tail_bytes} bytes)\n")
    return 0
