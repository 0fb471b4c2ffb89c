"""Spans from a trail, following the OpenTelemetry GenAI conventions for
agents: `invoke_agent` per subagent (or run), `chat` per model call,
`execute_tool` per tool call and for an `sh` subagent's command.

Imports `zapcli.tracecontext`, `zapcli.trail.records` (time parsing). Pure:
records in, spans out, the same whether fed live (a runner following its own
trail) or from a finished trail (`zapcli trace export`), so both send the
same ids. Ids come from the spawn record's `trace` and `tracecontext.child_id`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from zapcli import tracecontext
from zapcli.trail.model import Status, is_terminal
from zapcli.trail.records import parse_iso

# records that end what the model was told: a model call starts after the latest one
_BOUNDARIES = frozenset({"start", "tool_result", "usage", "steer", "approval_decision", "notice"})


@dataclass
class Span:
    """One span. Times are epoch seconds; `end` None while it is open."""

    name: str
    span_id: str
    parent_span_id: str | None
    start: float
    end: float | None
    kind: str = "internal"  # internal | client
    role: str = "agent"  # agent | model | tool | sh
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the status description of a span that ended in error
    events: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)
    owner: str = ""  # the subagent (or run) whose trail made it
    # spans of other traces it follows: (trace id, span id, relation), e.g. a continued
    # subagent's first run
    links: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class Agent:
    """What a trail says about its subagent, beside its spans (the timeline's row)."""

    id: str
    name: str
    cli: str
    provider: str | None  # gen_ai.provider.name: its backend's, in the spawn record
    trace_id: str
    span_id: str
    parent_span_id: str | None
    parent_id: str | None
    session: str
    task: str
    model: str | None
    created: float
    launched: float | None = None
    started: float | None = None
    ended: float | None = None
    status: str | None = None
    reason: str | None = None
    waits: list[list[float | None]] = field(default_factory=list)  # awaiting approval: [from, to]
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    is_run: bool = False
    tracestate: str | None = None


def _ts(rec: dict[str, Any]) -> float | None:
    value = rec.get("ts")
    try:
        return parse_iso(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _int(value: Any) -> int:
    """A count from a record; a negative one (a damaged trail) counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _derived(sid: str, size: int) -> str:
    """Stable ids for a trail written before spawn records carried `trace`."""
    return hashlib.blake2b(f"zapcli/{sid}".encode(), digest_size=size).hexdigest()


def _links(spawn: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The spans of other traces its spawn record's `trace.links` names."""
    trace: dict[str, Any] = spawn["trace"] if isinstance(spawn.get("trace"), dict) else {}
    out = []
    for link in trace.get("links") or ():
        if isinstance(link, dict) and tracecontext.work_env(link):  # well-formed ids only
            out.append((link["trace_id"], link["span_id"], str(link.get("relation") or "follows")))
    return out


def agent_of(sid: str, spawn: dict[str, Any]) -> Agent:
    trace: dict[str, Any] = spawn["trace"] if isinstance(spawn.get("trace"), dict) else {}
    ok = bool(tracecontext.work_env(trace))
    definition: dict[str, Any] = spawn["definition"] if isinstance(spawn.get("definition"), dict) else {}
    cli = str(spawn.get("cli") or "zapcli")
    name = spawn.get("agent") or definition.get("name") or cli
    return Agent(
        id=sid, name=str(name), cli=cli,
        provider=spawn["genai_provider"] if isinstance(spawn.get("genai_provider"), str) else None,
        trace_id=trace["trace_id"] if ok else _derived(sid, 16),
        span_id=trace["span_id"] if ok else _derived(sid, 8),
        parent_span_id=trace.get("parent_span_id") if ok else None,
        parent_id=trace.get("parent_id") if isinstance(trace.get("parent_id"), str) else None,
        session=str(spawn.get("session") or ""), task=str(spawn.get("task") or ""),
        model=spawn.get("model") if isinstance(spawn.get("model"), str) else None,
        created=_ts(spawn) or 0.0, is_run=spawn.get("run") is True,
        tracestate=trace.get("tracestate") if ok and isinstance(trace.get("tracestate"), str) else None)


class SpanBuilder:
    """Feed a trail's records in order; `feed` returns the spans each one
    ends, `close` the rest (open ones end at the trail's end, as errors)."""

    def __init__(self, sid: str, spawn: dict[str, Any]):
        self.agent = agent_of(sid, spawn)
        a = self.agent
        self.root = Span(f"invoke_agent {a.name}", a.span_id, a.parent_span_id, a.created, None,
                         attributes=self._agent_attrs(spawn), owner=sid, links=_links(spawn))
        self._boundary = a.created
        self._calls: dict[str, Span] = {}
        self._models = 0
        self._sh: Span | None = None
        self.closed = False

    def _agent_attrs(self, spawn: dict[str, Any]) -> dict[str, Any]:
        a = self.agent
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": a.id,
                                 "gen_ai.agent.name": a.name, "gen_ai.conversation.id": a.id,
                                 "zapcli.session": a.session, "zapcli.backend": a.cli}
        if a.provider:
            attrs["gen_ai.provider.name"] = a.provider
        if a.model:
            attrs["gen_ai.request.model"] = a.model
        description = (spawn.get("definition") or {}).get("description") \
            if isinstance(spawn.get("definition"), dict) else None
        if isinstance(description, str) and description:
            attrs["gen_ai.agent.description"] = description[:300]
        if a.parent_id:
            attrs["zapcli.parent_id"] = a.parent_id
        if isinstance(spawn.get("continue_of"), str):
            attrs["zapcli.continue_of"] = spawn["continue_of"]
        return attrs

    def _child(self, key: str, name: str, start: float, role: str, kind: str = "internal",
               **attrs: Any) -> Span:
        return Span(name, tracecontext.child_id(self.agent.span_id, key), self.agent.span_id,
                    start, None, kind=kind, role=role, attributes=attrs, owner=self.agent.id)

    def feed(self, rec: dict[str, Any]) -> list[Span]:
        if self.closed:
            return []
        rtype, ts = rec.get("type"), _ts(rec)
        if ts is None:
            return []
        handler = getattr(self, "_on_" + str(rtype), None)
        done = handler(rec, ts) if handler is not None else []
        if rtype in _BOUNDARIES:
            self._boundary = max(self._boundary, ts)
        return done

    def _on_process(self, rec: dict[str, Any], ts: float) -> list[Span]:
        self.agent.launched = ts
        return []

    def _on_start(self, rec: dict[str, Any], ts: float) -> list[Span]:
        self.agent.started = ts
        self.root.events.append(("start", ts, {"process.pid": _int(rec.get("pid"))}))
        if self.agent.cli == "sh":
            self._sh = self._child("sh", "execute_tool sh", ts, "sh", **{
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "sh",
                "gen_ai.tool.type": "function", "zapcli.session": self.agent.session})
        return []

    def _on_session(self, rec: dict[str, Any], ts: float) -> list[Span]:
        if isinstance(rec.get("session_id"), str):  # an agent CLI's own conversation
            self.root.attributes["gen_ai.conversation.id"] = rec["session_id"]
        if isinstance(rec.get("version"), str):
            self.root.attributes["gen_ai.agent.version"] = rec["version"]
        return []

    def _on_usage(self, rec: dict[str, Any], ts: float) -> list[Span]:
        self._models += 1
        a = self.agent
        ms = rec.get("duration_ms")
        start = ts - ms / 1000 if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms >= 0 \
            else self._boundary
        model = rec.get("model") if isinstance(rec.get("model"), str) else a.model
        ins, outs, cached = _int(rec.get("input_tokens")), _int(rec.get("output_tokens")), \
            _int(rec.get("cached_tokens"))
        a.input_tokens += ins
        a.output_tokens += outs
        a.cached_tokens += cached
        span = self._child(f"model/{self._models}", f"chat {model or ''}".strip(), min(start, ts),
                           "model", "client", **{
                               "gen_ai.operation.name": "chat",
                               "gen_ai.provider.name": a.provider or a.cli,
                               "gen_ai.conversation.id": self.root.attributes["gen_ai.conversation.id"],
                               "gen_ai.agent.id": a.id,
                               "gen_ai.usage.input_tokens": ins, "gen_ai.usage.output_tokens": outs})
        if a.model:
            span.attributes["gen_ai.request.model"] = a.model
        if model:
            span.attributes["gen_ai.response.model"] = model
        if cached:
            span.attributes["gen_ai.usage.cache_read.input_tokens"] = cached
        if written := _int(rec.get("cache_write_tokens")):
            span.attributes["gen_ai.usage.cache_creation.input_tokens"] = written
        cost = rec.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
            span.attributes["zapcli.cost_usd"] = float(cost)
            a.cost_usd = (a.cost_usd or 0.0) + float(cost)
        span.end = ts
        return [span]

    def _on_tool_call(self, rec: dict[str, Any], ts: float) -> list[Span]:
        call_id, name = str(rec.get("call_id") or ""), str(rec.get("name") or "tool")
        self._calls[call_id] = self._child(tracecontext.tool_key(call_id), f"execute_tool {name}", ts,
                                           "tool", **{"gen_ai.operation.name": "execute_tool",
                                                      "gen_ai.tool.name": name,
                                                      "gen_ai.tool.call.id": call_id,
                                                      "gen_ai.tool.type": "function",
                                                      "gen_ai.agent.id": self.agent.id})
        return []

    def _on_tool_result(self, rec: dict[str, Any], ts: float) -> list[Span]:
        span = self._calls.pop(str(rec.get("call_id") or ""), None)
        if span is None:
            return []
        span.end = max(ts, span.start)
        waited = rec.get("approval_wait_ms")
        if isinstance(waited, int) and not isinstance(waited, bool):
            span.attributes["zapcli.approval_wait_ms"] = waited
        if rec.get("ok") is False:
            span.error = str(rec.get("content") or "tool error")[:200]
            span.attributes["error.type"] = "tool_error"
        return [span]

    def _on_approval_request(self, rec: dict[str, Any], ts: float) -> list[Span]:
        self.agent.waits.append([ts, None])
        self.root.events.append(("approval_request", ts, {
            "zapcli.tool": str(rec.get("tool") or ""), "zapcli.summary": str(rec.get("summary") or "")[:200]}))
        return []

    def _on_approval_decision(self, rec: dict[str, Any], ts: float) -> list[Span]:
        for wait in self.agent.waits:
            if wait[1] is None:
                wait[1] = ts
                break
        self.root.events.append(("approval_decision", ts, {"zapcli.decision": str(rec.get("decision") or "")}))
        return []

    def _on_steer(self, rec: dict[str, Any], ts: float) -> list[Span]:
        if rec.get("delivered"):
            self.root.events.append(("steer", ts, {}))
        return []

    def _on_status(self, rec: dict[str, Any], ts: float) -> list[Span]:
        if not is_terminal(rec.get("status")):
            return []
        a = self.agent
        a.ended, a.status = ts, str(rec.get("status"))
        a.reason = rec.get("reason") if isinstance(rec.get("reason"), str) else None
        return self.close(ts, exit_code=rec.get("exit_code"))

    def close(self, at: float | None = None, exit_code: Any = None) -> list[Span]:
        """End every open span at `at` (the terminal status, else the last record)."""
        if self.closed:
            return []
        self.closed = True
        a = self.agent
        at = max(at if at is not None else self._boundary, a.created)
        failed = a.status is not None and a.status != Status.COMPLETED
        out: list[Span] = []
        for span in self._calls.values():  # a tool call left without its result
            span.end, span.error = at, f"no result: the subagent ended {a.status or 'before it'}"
            span.attributes["error.type"] = "no_result"
            out.append(span)
        self._calls.clear()
        if self._sh is not None:
            self._sh.end = at
            if isinstance(exit_code, int) and not isinstance(exit_code, bool):
                self._sh.attributes["process.exit.code"] = exit_code
            if failed:
                self._sh.error, self._sh.attributes["error.type"] = a.reason or a.status, a.status
            out.append(self._sh)
        for wait in a.waits:
            wait[1] = wait[1] if wait[1] is not None else at
        self.root.end = at
        self.root.attributes["zapcli.status"] = a.status or "unknown"
        self.root.attributes["gen_ai.usage.input_tokens"] = a.input_tokens
        self.root.attributes["gen_ai.usage.output_tokens"] = a.output_tokens
        if failed or a.status is None:
            self.root.error = a.reason or f"ended {a.status or 'without a recorded status'}"
            self.root.attributes["error.type"] = a.status or "unknown"
        out.append(self.root)
        return out


def build(sid: str, records: list[dict[str, Any]], *, finished: bool = True) -> tuple[Agent, list[Span]]:
    """Every span of one trail (its first record must be its `spawn`). A trail
    that has not ended: its open spans are left out unless `finished`."""
    builder = SpanBuilder(sid, records[0])
    spans: list[Span] = []
    for rec in records[1:]:
        spans += builder.feed(rec)
    if finished and not builder.closed:
        last = max((t for t in (_ts(r) for r in records) if t is not None), default=None)
        spans += builder.close(last)
    return builder.agent, spans
