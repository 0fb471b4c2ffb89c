"""`zapcli call`: execute one `tool-schema` call, print the text a model gets.

Imports `zapcli.toolapi` (no typer, rich or mcp: it is on the fast path). The
call is `{"action": ..., <parameters>}` from argv or stdin; stdout is exactly
the tool result's text (`--json`: its JSON document); the exit code is the
matching command's (an error's: 1 or 2, with its message on stderr too).
Each call is a process of its own: what its spawns' ends were already shown
is kept in the session (`Env.durable`), so `wait` without ids shows each end once.
"""

from __future__ import annotations

import sys

from zapcli.cli.output import emit_json, emit_text, error

MAX_CALL_BYTES = 8 * 1024 * 1024  # a 1 MB task, JSON-escaped, fits


def execute(document: str | None = None, json: bool = False) -> int:
    import orjson

    from zapcli.toolapi.dispatch import Env, Reply, call_document

    # stdin: read up to one byte past the limit, never the whole of /dev/zero
    raw = (sys.stdin.buffer.read(MAX_CALL_BYTES + 1) if document in (None, "-")
           else document.encode("utf-8", "surrogatepass"))
    message = None
    if len(raw) > MAX_CALL_BYTES:
        message = (f"the call is more than {MAX_CALL_BYTES:,} bytes, the limit (8 MB); a task "
                   "is at most 1 MB")
    else:
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            message = (f"the call is not valid JSON ({exc}); give one object like "
                       "{\"action\": \"poll\", \"ids\": [\"sa_…\"]}")
    if message is not None:
        from zapcli.render.docschema import error_doc

        reply = Reply(message, error_doc("usage", message, 2), 2, error=True, code="usage")
    else:
        reply = call_document(parsed, Env(surface="tool", durable=True))
    if json:
        emit_json(reply.doc)
    else:
        emit_text(reply.text if reply.text.endswith("\n") else reply.text + "\n")
    if reply.error and json:  # stdout holds the document: say it on stderr too
        error(reply.text.split("\n")[0])
    return reply.exit_code
