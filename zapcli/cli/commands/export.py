"""`zapcli export ID --format atif`: the tree as an ATIF trajectory (stdout or -o FILE)."""

from __future__ import annotations

from zapcli.cli.output import emit, emit_json


def execute(id: str, format: str = "atif", output: str | None = None, json: bool = False) -> int:
    from zapcli.render import telemetry as render
    from zapcli.telemetry.verbs import export

    res = export(id, format, output)
    if res.document is not None:
        emit_json(res.document)  # the document is the answer, with or without --json
    else:
        emit(json, render.written_doc, render.written_lines, res)
    return 0
