"""`zapcli trace export`: send a finished tree's spans to the OTLP collector now."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.render import telemetry as render


def export(id: str | None = None, session: list[str] | None = None, json: bool = False) -> int:
    from zapcli.telemetry import otlp
    from zapcli.telemetry.verbs import trace_export

    otlp.quiet()  # the SDK's retries would log to stderr; the outcome is said once, below
    emit(json, render.export_doc, render.export_lines, trace_export(id, session))
    return 0
