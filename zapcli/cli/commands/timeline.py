"""`zapcli timeline`: a tree's (or session's) timeline as a page or a Perfetto trace."""

from __future__ import annotations

from zapcli.cli.output import emit, emit_json


def execute(id: str | None = None, session: list[str] | None = None, html: str | None = None,
            format: str | None = None, output: str | None = None, json: bool = False) -> int:
    from zapcli.render import telemetry as render
    from zapcli.telemetry.verbs import timeline

    res = timeline(id, session, html, format, output)
    if res.document is not None:
        emit_json(res.document)
    else:
        emit(json, render.written_doc, render.written_lines, res)
    return 0
