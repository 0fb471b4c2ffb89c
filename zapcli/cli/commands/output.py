"""`zapcli output`: the whole captured output, unfolded (or followed)."""

from __future__ import annotations

import codecs
import sys

from zapcli.cli.output import emit_json, escape_controls
from zapcli.ops.output import chunks


def execute(id: str, stderr: bool = False, follow: bool = False, raw: bool = False,
            json: bool = False) -> int:
    if json:
        data = b"".join(chunks(id, stderr=stderr, follow=follow))
        emit_json({"id": id, "stream": "stderr" if stderr else "stdout", "bytes": len(data),
                   "text": data.decode("utf-8", "replace")})
        return 0
    out = sys.stdout.buffer
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in chunks(id, stderr=stderr, follow=follow):
        if raw:
            out.write(chunk)
        else:  # never let captured escape sequences reach the terminal
            out.write(escape_controls(decoder.decode(chunk)).encode("utf-8"))
        out.flush()
    if not raw:
        out.write(escape_controls(decoder.decode(b"", final=True)).encode("utf-8"))
    out.flush()
    return 0
