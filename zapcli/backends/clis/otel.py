"""An agent CLI's own telemetry in its subagent's trace (C47): what each CLI
takes to export its spans, through the OTLP endpoint and headers of the
standard OTEL_* variables, as children of the subagent's `invoke_agent`
span (the TRACEPARENT its runner hands every piece of its work).

Imports the standard library, `zapcli.tracecontext`, `zapcli.backends.clis.base`.
Used by the adapters' `join_trace`, only when OTEL_* asks for traces
(`tracecontext.export_wanted`). A variable the person set wins over every
default here. What each CLI takes, read from its installed sources:

- Claude Code reads TRACEPARENT itself; its spans need CLAUDE_CODE_ENABLE_TELEMETRY
  and its tracing beta (CLAUDE_CODE_ENHANCED_TELEMETRY_BETA), OTEL_TRACES_EXPORTER=otlp.
- Codex reads TRACEPARENT itself; its exporter is set in config.toml (`[otel]
  trace_exporter`), the endpoint there, the headers never (its exporter reads
  OTEL_EXPORTER_OTLP_HEADERS from the environment, like every OTel SDK).
- Gemini CLI and Qwen Code export spans (GEMINI_/QWEN_TELEMETRY_*: enabled,
  traces, OTLP protocol `http` — OTLP/HTTP as JSON — or `grpc`) but never read
  TRACEPARENT: `otel_parent.cjs`, preloaded with NODE_OPTIONS, makes its span
  the parent of theirs through the OpenTelemetry JS API's global registry.
- opencode exports spans by itself once OTEL_EXPORTER_OTLP_ENDPOINT is set
  (Effect's OTLP layer, in a Bun binary: no preload reaches it) and reads no
  TRACEPARENT: its spans make a trace of their own, which its resource
  attributes tie to the subagent (`zapcli.subagent.id`, `zapcli.trace_id`).

Prompts and answers stay out of the CLIs' spans unless the person asked
(as in zapcli's own spans). The headers are secrets (`zapcli.redact`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from zapcli import tracecontext

PRELOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otel_parent.cjs")


def _protocol(env: Mapping[str, str]) -> str:
    """The OTLP protocol the person asked for traces (the SDK's names):
    http/protobuf (zapcli's own exporter), http/json or grpc."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(name, "").strip().lower()
        if value:
            return value
    return "http/protobuf"


def traces_endpoint(env: Mapping[str, str]) -> str | None:
    """Where traces go, as a full URL (the SDK's rule: a traces endpoint is
    used as given; the general one gets `/v1/traces` for HTTP)."""
    given = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if given:
        return given
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not base:
        return None
    return base if _protocol(env) == "grpc" else base.rstrip("/") + "/v1/traces"


def base_endpoint(env: Mapping[str, str]) -> str | None:
    """The endpoint a CLI that appends `/v1/traces` itself wants."""
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if base:
        return base
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    return traces[: -len("/v1/traces")] if traces.endswith("/v1/traces") else traces or None


def claude(env: dict[str, str]) -> list[str]:
    env.setdefault("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
    env.setdefault("CLAUDE_CODE_ENHANCED_TELEMETRY_BETA", "1")
    env.setdefault("OTEL_TRACES_EXPORTER", "otlp")
    env.setdefault("OTEL_EXPORTER_OTLP_PROTOCOL", _protocol(env))
    env.setdefault("OTEL_METRICS_EXPORTER", "none")  # asked for traces: its metrics and logs
    env.setdefault("OTEL_LOGS_EXPORTER", "none")  # go nowhere unless the person said where
    return []


def codex_section(env: Mapping[str, str]) -> tuple[str, list[str]]:
    """The `[otel]` section of codex's config.toml, and what to say about it."""
    endpoint = traces_endpoint(env)
    if endpoint is None:
        return "", []
    quoted = endpoint.replace("\\", "\\\\").replace('"', '\\"')
    if _protocol(env) == "grpc":
        exporter = f'{{ otlp-grpc = {{ endpoint = "{quoted}" }} }}'
    else:
        encoding = "json" if _protocol(env) == "http/json" else "binary"
        exporter = f'{{ otlp-http = {{ endpoint = "{quoted}", protocol = "{encoding}" }} }}'
    log_prompts = "true" if env.get("OTEL_LOG_USER_PROMPTS", "") in ("1", "true") else "false"
    return (f'\n[otel]\nexporter = "none"\ntrace_exporter = {exporter}\n'
            f"log_user_prompt = {log_prompts}\n"), []


def node_cli(env: dict[str, str], prefix: str) -> list[str]:
    """Gemini CLI (`GEMINI`) or Qwen Code (`QWEN`): telemetry on, traces to
    the endpoint, prompts left out, and the TRACEPARENT preload."""
    grpc = _protocol(env) == "grpc"
    env.setdefault(f"{prefix}_TELEMETRY_ENABLED", "true")
    env.setdefault(f"{prefix}_TELEMETRY_TARGET", "local")
    env.setdefault(f"{prefix}_TELEMETRY_LOG_PROMPTS", "false")
    env.setdefault(f"{prefix}_TELEMETRY_OTLP_PROTOCOL", "grpc" if grpc else "http")
    if prefix == "GEMINI":
        env.setdefault("GEMINI_TELEMETRY_TRACES_ENABLED", "true")
    base = base_endpoint(env)
    if base:
        env.setdefault(f"{prefix}_TELEMETRY_OTLP_ENDPOINT", base)
    said = []
    if tracecontext.parse(env.get(tracecontext.TRACEPARENT)) is not None:
        preload = f'--require "{PRELOAD}"'
        env["NODE_OPTIONS"] = f"{env['NODE_OPTIONS']} {preload}" if env.get("NODE_OPTIONS") else preload
    if env[f"{prefix}_TELEMETRY_OTLP_PROTOCOL"] == "http":
        said.append(f"its spans go as OTLP/HTTP JSON (its only HTTP encoding) to "
                    f"{env.get(f'{prefix}_TELEMETRY_OTLP_ENDPOINT')}/v1/traces; a receiver that takes "
                    f"protobuf only refuses them: set {prefix}_TELEMETRY_OTLP_PROTOCOL=grpc and "
                    f"{prefix}_TELEMETRY_OTLP_ENDPOINT to its gRPC address")
    return said


def tied(env: dict[str, str], cli: str) -> list[str]:
    """For a CLI whose spans cannot nest under its subagent's: resource
    attributes that name the subagent and its trace, and what to say."""
    parsed = tracecontext.parse(env.get(tracecontext.TRACEPARENT))
    sid = env.get("ZAPCLI_SUBAGENT_ID")
    extra = [f"zapcli.subagent.id={sid}"] if sid else []
    if parsed is not None:
        extra.append(f"zapcli.trace_id={parsed[0]}")
    if extra:
        given = env.get("OTEL_RESOURCE_ATTRIBUTES", "").strip().strip(",")
        env["OTEL_RESOURCE_ATTRIBUTES"] = ",".join([given, *extra] if given else extra)
    return [f"{cli} sends its own spans as a trace of its own (it reads no TRACEPARENT): their "
            "resource attributes zapcli.subagent.id and zapcli.trace_id name this subagent and its trace"]

