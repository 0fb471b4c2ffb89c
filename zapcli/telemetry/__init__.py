"""What a fleet did, for other tools: OpenTelemetry traces (GenAI agent
conventions), ATIF trajectories and a timeline (HTML, Perfetto), all made
from trails on demand — or, for traces, live from a runner's own trail.

May import `zapcli.trail`, `zapcli.tracecontext`, `zapcli.redact`,
`zapcli.errors`, `zapcli.paths`, and `opentelemetry` (in `otlp` only). Never
imported by the hot commands (spawn, poll, list): only by the commands that
export, the runner when OTEL_* asks for traces, and `zapcli run`.
"""
