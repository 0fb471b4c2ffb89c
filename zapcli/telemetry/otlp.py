"""Send spans made from trails to an OTLP/HTTP endpoint with the official
OpenTelemetry SDK (the `zapcli[otel]` extra).

Imports `opentelemetry` (only here, and only when called), `zapcli.telemetry.spans`.
The endpoint, headers, timeout and resource come from the standard `OTEL_*`
variables, read by the SDK itself. Spans keep the ids the trail gives them
(`ReadableSpan`s are built directly, not through a tracer), so the
TRACEPARENT a subagent's work saw names the span exported here.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from zapcli import __version__
from zapcli.errors import UsageError
from zapcli.telemetry.spans import Agent, Span

INSTALL_HINT = "pip install 'zapcli[otel]' (opentelemetry-sdk and its OTLP/HTTP exporter)"
SCOPE = "zapcli"


def endpoint() -> str | None:
    """Where traces go (None: not configured): the SDK's own precedence."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError:
        raise UsageError(f"traces need the OpenTelemetry SDK: {INSTALL_HINT}") from None
    return sdk_trace


def quiet() -> None:
    """The SDK logs a failed export to stderr: in a runner that is the
    subagent's own captured stderr, which telemetry must never change."""
    import logging

    log = logging.getLogger("opentelemetry")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    log.setLevel(logging.CRITICAL + 1)


def _ns(t: float) -> int:
    return int(round(t * 1e9))


class Exporter:
    """A batch processor over the OTLP/HTTP span exporter. `send` never
    blocks on the network; `close` waits at most `wait_s` for delivery."""

    def __init__(self, *, schedule_delay_ms: float | None = None):
        sdk_trace = _sdk()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self._sdk = sdk_trace
        self.resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "zapcli",
                                         "service.version": __version__})
        self.scope = InstrumentationScope(SCOPE, __version__)
        self.exporter = OTLPSpanExporter()
        self.processor = BatchSpanProcessor(self.exporter, schedule_delay_millis=schedule_delay_ms)
        self.sent = 0

    def send(self, agent: Agent, spans: list[Span]) -> None:
        for span in spans:
            if span.end is not None:
                self.processor.on_end(self._readable(agent, span))
                self.sent += 1

    def _readable(self, agent: Agent, span: Span) -> Any:
        from opentelemetry import trace
        from opentelemetry.trace.status import Status, StatusCode

        flags = trace.TraceFlags(trace.TraceFlags.SAMPLED)
        state = trace.TraceState.from_header([agent.tracestate]) if agent.tracestate else trace.TraceState()
        ctx = trace.SpanContext(int(agent.trace_id, 16), int(span.span_id, 16), False, flags, state)
        parent = (trace.SpanContext(int(agent.trace_id, 16), int(span.parent_span_id, 16), True, flags, state)
                  if span.parent_span_id else None)
        events = [self._sdk.Event(name, attrs, _ns(ts)) for name, ts, attrs in span.events]
        status = Status(StatusCode.ERROR, span.error) if span.error is not None else Status(StatusCode.UNSET)
        kind = trace.SpanKind.CLIENT if span.kind == "client" else trace.SpanKind.INTERNAL
        end = span.end if span.end is not None else span.start
        links = [trace.Link(trace.SpanContext(int(t, 16), int(s, 16), True, flags), {"zapcli.relation": rel})
                 for t, s, rel in span.links]
        return self._sdk.ReadableSpan(
            name=span.name, context=ctx, parent=parent, resource=self.resource, links=links,
            attributes=dict(span.attributes), events=events, kind=kind, status=status,
            start_time=_ns(span.start), end_time=_ns(max(end, span.start)),
            instrumentation_scope=self.scope)

    def export_now(self, agent: Agent, spans: list[Span]) -> bool:
        """Send finished spans at once (not through the batch queue): True
        when the endpoint took them."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        ready = [self._readable(agent, s) for s in spans if s.end is not None]
        for at in range(0, len(ready), 512):
            if self.exporter.export(ready[at:at + 512]) is not SpanExportResult.SUCCESS:
                return False
            self.sent += len(ready[at:at + 512])
        return True

    def close(self, wait_s: float) -> bool:
        """Deliver what is queued, waiting at most `wait_s` (a collector that
        is down must not hold the caller): True when it all went out."""
        result: list[bool] = []

        def finish() -> None:
            try:
                result.append(bool(self.processor.force_flush(int(wait_s * 1000))))
                self.processor.shutdown()
            except Exception:  # noqa: BLE001 - an exporter failure is never the subagent's
                result.append(False)

        worker = threading.Thread(target=finish, name="otlp-close", daemon=True)
        worker.start()
        worker.join(wait_s + 0.5)
        return bool(result and result[0])
