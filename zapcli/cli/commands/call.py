"""`zapcli call`: execute one `tool-schema` call, print the text a model gets.

Imports `zapcli.toolapi` (no typer, rich or mcp: it is on the fast path). The
call is `{"action": ..., <parameters>}` from argv or stdin; stdout is exactly
the tool result's text (`--json`: its JSON document); the exit code is the
matching command's (an error's: 1 or 2, with its message on stderr too).
"""

from __future__ import annotations

import sys

from zapcli.cli.output import emit_json, emit_text, error


def execute(document: str | None = None, json: bool = False) -> int:
    import orjson

    from zapcli.toolapi.dispatch import Env, Reply, call_document

    raw = sys.stdin.buffer.read() if document in (None, "-") else document.encode("utf-8", "surrogatepass")
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        message = (f"the call is not valid JSON ({exc}); give one object like "
                   "{\"action\": \"poll\", \"ids\": [\"sa_…\"]}")
        reply = Reply(message, {"error": {"code": "usage", "message": message, "exit_code": 2}},
                      2, error=True, code="usage")
    else:
        reply = call_document(parsed, Env(surface="tool"))
    if json:
        emit_json(reply.doc)
    else:
        emit_text(reply.text if reply.text.endswith("\n") else reply.text + "\n")
    if reply.error and json:  # stdout holds the document: say it on stderr too
        error(reply.text.split("\n")[0])
    return reply.exit_code
