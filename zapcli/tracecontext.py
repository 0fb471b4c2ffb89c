"""W3C trace context for subagents: the `trace` field of a spawn record and
the `TRACEPARENT` / `TRACESTATE` a subagent's work runs with.

Imports the standard library only (spawn, the runner, the tools and the
backends call it on their hot paths). Every span id zapcli exports is either
drawn here at spawn time (a subagent's `invoke_agent` span) or derived from
it by `child_id` (its model calls, tool calls, `sh` work), so the context a
command got while it ran names the very span `zapcli trace export` sends
later from the trail.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

TRACEPARENT = "TRACEPARENT"
TRACESTATE = "TRACESTATE"
_HEX = frozenset("0123456789abcdef")
# What a subagent's work may be told it runs under (docs/explanation/rules.md#fleets-traces-teams): the names the
# scrubbed tool environment lets through.
NAMES = (TRACEPARENT, TRACESTATE)


def _hex(text: str, size: int) -> bool:
    return len(text) == size and set(text) <= _HEX and text.strip("0") != ""


def parse(value: str | None) -> tuple[str, str, bool] | None:
    """(trace id, span id, sampled) of a `traceparent` header value, or None
    when it is not one (W3C Trace Context level 1: version 00, or a later
    version read as 00; version ff and all-zero ids are invalid)."""
    if not value:
        return None
    parts = value.strip().lower().split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or set(parts[0]) - _HEX or parts[0] == "ff":
        return None
    if parts[0] == "00" and len(parts) != 4:
        return None
    trace_id, span_id, flags = parts[1], parts[2], parts[3]
    if not (_hex(trace_id, 32) and _hex(span_id, 16) and len(flags) == 2 and set(flags) <= _HEX):
        return None
    return trace_id, span_id, bool(int(flags, 16) & 1)


def format_parent(trace_id: str, span_id: str, sampled: bool = True) -> str:
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"


def new(environ: Mapping[str, str] | None = None, *, traceparent: str | None = None,
        parent_id: str | None = None, links: Any = None) -> dict[str, Any]:
    """The `trace` field of a new subagent's spawn record: a new span in the
    trace of `traceparent` (else the environment's TRACEPARENT, so work
    spawned from inside a subagent joins its tree), or the root of a new
    trace. `parent_id`: the subagent (or run) it was started from, if any
    (else the environment's ZAPCLI_SUBAGENT_ID). `links`: spans of other
    traces it follows ({trace_id, span_id, relation}: a continued subagent's
    first run), which its `invoke_agent` span links to."""
    env = os.environ if environ is None else environ
    given = traceparent if traceparent is not None else env.get(TRACEPARENT)
    parsed = parse(given)
    out: dict[str, Any] = {"trace_id": parsed[0] if parsed else os.urandom(16).hex(),
                           "span_id": _nonzero(os.urandom(8).hex()),
                           "parent_span_id": parsed[1] if parsed else None,
                           "sampled": parsed[2] if parsed else True}
    state = env.get(TRACESTATE) if parsed and traceparent is None else None
    if state:
        out["tracestate"] = state[:512]  # W3C: at most 32 entries; a runaway value is cut
    parent = parent_id or env.get("ZAPCLI_SUBAGENT_ID")
    if parent:
        out["parent_id"] = parent
    kept = [dict(link) for link in links or () if isinstance(link, dict) and _valid(link)]
    if kept:
        out["links"] = kept
    return out


def _nonzero(span_hex: str) -> str:
    return span_hex if span_hex.strip("0") else "0000000000000001"


def child_id(span_id: str, key: str) -> str:
    """The id of the child span `key` (e.g. "tool/call_1", "model/3", "sh")
    of span `span_id`: the same whoever derives it, whenever."""
    try:  # the C module hashlib takes it from, without hashlib's OpenSSL (~4 MB per runner)
        from _blake2 import blake2b
    except ImportError:
        from hashlib import blake2b

    return _nonzero(blake2b(f"{span_id}/{key}".encode(), digest_size=8).hexdigest())


def work_env(trace: Any, key: str | None = None) -> dict[str, str]:
    """TRACEPARENT (and TRACESTATE) for work running under the span of a
    spawn record's `trace` — or, with `key`, under that span's child `key`.
    Empty for a record without one (a subagent spawned before traces)."""
    if not isinstance(trace, dict) or not _valid(trace):
        return {}
    span = trace["span_id"] if key is None else child_id(trace["span_id"], key)
    out = {TRACEPARENT: format_parent(trace["trace_id"], span, trace.get("sampled", True) is not False)}
    if isinstance(trace.get("tracestate"), str):
        out[TRACESTATE] = trace["tracestate"]
    return out


def child_env(environ: Mapping[str, str], key: str) -> dict[str, str]:
    """TRACEPARENT for the child span `key` of the span `environ`'s
    TRACEPARENT names (a tool call of the agent whose context it is); empty
    when it names none."""
    parsed = parse(environ.get(TRACEPARENT))
    if parsed is None:
        return {}
    return {TRACEPARENT: format_parent(parsed[0], child_id(parsed[1], key), parsed[2])}


def _valid(trace: dict[str, Any]) -> bool:
    t, s = trace.get("trace_id"), trace.get("span_id")
    return isinstance(t, str) and isinstance(s, str) and _hex(t, 32) and _hex(s, 16)


def tool_key(call_id: str) -> str:
    return f"tool/{call_id}"


def export_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """True when the standard OTEL_* variables ask for traces over OTLP: an
    endpoint is set, the SDK is not disabled, the traces exporter is not `none`.
    (Checked by every runner: a few dictionary lookups, no import.)"""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
                or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())


def for_work(environ: Mapping[str, str], key: str) -> dict[str, str]:
    """`environ` for work that is the child span `key` of the span its
    TRACEPARENT names (an `sh` command, a `bash` call): the one call each
    place that starts work makes (unchanged without a TRACEPARENT)."""
    return {**environ, **child_env(environ, key)}
