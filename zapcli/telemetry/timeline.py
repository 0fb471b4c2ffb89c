"""A tree's timeline: one row per subagent (queued, running, awaiting
approval, its end) with its model and tool calls as bars; and the same as
Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing open.

Imports `zapcli.telemetry` (tree, spans). Times are epoch seconds here;
the page and the trace events count from the tree's first moment.
"""

from __future__ import annotations

import time
from typing import Any

from zapcli.redact import display
from zapcli.telemetry.spans import Span, build
from zapcli.telemetry.tree import Node

TASK_CHARS = 300


def _lanes(calls: list[dict[str, Any]]) -> int:
    """Give each call a lane so that calls on one lane never overlap (calls
    run in parallel: several `subagent` calls at once). Returns the count."""
    ends: list[float] = []
    for call in sorted(calls, key=lambda c: (c["start"], c["end"])):
        for i, end in enumerate(ends):
            if end <= call["start"]:
                call["lane"], ends[i] = i, call["end"]
                break
        else:
            call["lane"] = len(ends)
            ends.append(call["end"])
    return len(ends)


def _call(span: Span) -> dict[str, Any]:
    details = {k: v for k, v in span.attributes.items()
               if k.startswith(("gen_ai.tool", "gen_ai.usage", "gen_ai.response.model", "zapcli.", "process."))}
    return {"kind": span.role, "name": span.name, "start": span.start, "end": max(span.end or span.start, span.start),
            "error": span.error, "details": details, "span_id": span.span_id}


def _row(node: Node, depth: int, now: float) -> dict[str, Any]:
    records = node.records()
    agent, spans = build(node.id, records)
    ended = agent.ended
    if ended is None:  # still going: its bars reach now
        agent, spans = build(node.id, records, finished=False)
        spans = [s for s in spans if s.end is not None]
    calls = [_call(s) for s in spans if s.role in ("model", "tool", "sh")]
    end = ended if ended is not None else max(now, agent.created)
    waits = [[w[0], w[1] if w[1] is not None else end] for w in agent.waits]
    return {
        "id": node.id, "name": agent.name, "cli": agent.cli, "depth": depth, "is_run": agent.is_run,
        "parent": agent.parent_id, "session": agent.session, "model": agent.model,
        "task": display(agent.task)[:TASK_CHARS], "status": agent.status or "running",
        "reason": agent.reason, "created": agent.created, "launched": agent.launched,
        "started": agent.started, "ended": end, "running_now": ended is None, "waits": waits,
        "tokens": {"input": agent.input_tokens, "output": agent.output_tokens, "cached": agent.cached_tokens},
        "cost_usd": agent.cost_usd, "calls": calls, "lanes": _lanes(calls),
        "trace_id": agent.trace_id,
    }


def collect(roots: list[Node], title: str, now: float | None = None) -> dict[str, Any]:
    """The timeline of every tree in `roots`: each tree's rows together, the
    trees (and the children in each) in the order they started."""
    now = time.time() if now is None else now

    def walk(node: Node, depth: int) -> list[dict[str, Any]]:
        """The rows of a tree: its own, then each child's tree by start time."""
        below = sorted((walk(child, depth + 1) for child in node.children),
                       key=lambda t: (t[0]["created"], t[0]["id"]))
        return [_row(node, depth, now), *(row for tree in below for row in tree)]

    # trees of every session named, in the order they started (not session by session)
    once = {root.id: root for root in roots}.values()  # a tree two sessions share: drawn once
    trees = sorted((walk(root, 0) for root in once),
                   key=lambda t: (t[0]["created"], t[0]["id"]))
    rows = [row for tree in trees for row in tree]
    start = min((r["created"] for r in rows), default=now)
    end = max([r["ended"] for r in rows] + [c["end"] for r in rows for c in r["calls"]], default=now)
    totals = {"input": sum(r["tokens"]["input"] for r in rows), "output": sum(r["tokens"]["output"] for r in rows)}
    costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    return {"title": title, "start": start, "end": max(end, start), "rows": rows, "tokens": totals,
            "cost_usd": sum(costs) if costs else None, "made": now}


def _us(t: float, t0: float) -> float:
    return round((t - t0) * 1e6, 3)


def perfetto(data: dict[str, Any]) -> dict[str, Any]:
    """Chrome trace-event JSON: the tree as one process, a thread per
    subagent (its phases, nested) and one per lane of its calls."""
    t0 = data["start"]
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": f"zapcli {data['title']}"}}]
    tid = 0
    base: dict[str, int] = {}
    for row in data["rows"]:
        tid += 1
        base[row["id"]] = tid
        label = f"{'  ' * row['depth']}{row['id']} {row['name']} ({row['status']})"
        events += [{"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": label}},
                   {"ph": "M", "pid": 1, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}]
        events += _phase_events(row, tid, t0)
        first = tid
        for lane in range(row["lanes"]):
            tid += 1
            events += [{"ph": "M", "pid": 1, "tid": tid, "name": "thread_name",
                        "args": {"name": f"{'  ' * row['depth']}  {row['id']} calls" + (f" #{lane + 1}" if lane else "")}},
                       {"ph": "M", "pid": 1, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}]
        for call in row["calls"]:
            events.append({"ph": "X", "pid": 1, "tid": first + 1 + call["lane"], "name": call["name"],
                           "cat": call["kind"], "ts": _us(call["start"], t0),
                           "dur": max(_us(call["end"], t0) - _us(call["start"], t0), 0.0),
                           "args": {**call["details"], **({"error": call["error"]} if call["error"] else {})}})
    events += _flows(data["rows"], base, t0)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "metadata": {"source": "zapcli", "title": data["title"]}}


def _phase_events(row: dict[str, Any], tid: int, t0: float) -> list[dict[str, Any]]:
    args = {"id": row["id"], "task": row["task"], "status": row["status"], "reason": row["reason"],
            "input_tokens": row["tokens"]["input"], "output_tokens": row["tokens"]["output"],
            "cost_usd": row["cost_usd"], "model": row["model"]}
    out = [{"ph": "X", "pid": 1, "tid": tid, "name": f"{row['name']} {row['id']}", "cat": "subagent",
            "ts": _us(row["created"], t0), "dur": _us(row["ended"], t0) - _us(row["created"], t0), "args": args}]
    began = row["started"] if row["started"] is not None else row["ended"]
    if began > row["created"]:
        out.append({"ph": "X", "pid": 1, "tid": tid, "name": "queued", "cat": "phase",
                    "ts": _us(row["created"], t0), "dur": _us(began, t0) - _us(row["created"], t0)})
    if row["started"] is not None:
        out.append({"ph": "X", "pid": 1, "tid": tid, "name": "running", "cat": "phase",
                    "ts": _us(row["started"], t0), "dur": _us(row["ended"], t0) - _us(row["started"], t0)})
    for at, until in row["waits"]:
        out.append({"ph": "X", "pid": 1, "tid": tid, "name": "awaiting_approval", "cat": "phase",
                    "ts": _us(at, t0), "dur": max(_us(until, t0) - _us(at, t0), 0.0)})
    if not row["running_now"]:
        out.append({"ph": "i", "s": "t", "pid": 1, "tid": tid, "name": row["status"], "cat": "end",
                    "ts": _us(row["ended"], t0), "args": {"reason": row["reason"]}})
    return out


def _flows(rows: list[dict[str, Any]], base: dict[str, int], t0: float) -> list[dict[str, Any]]:
    """An arrow from a parent's row to each child it started."""
    out: list[dict[str, Any]] = []
    for n, row in enumerate(rows, 1):
        parent = row["parent"]
        if parent in base:
            at = _us(row["created"], t0)
            out += [{"ph": "s", "id": n, "pid": 1, "tid": base[parent], "name": "started", "cat": "spawn", "ts": at},
                    {"ph": "f", "bp": "e", "id": n, "pid": 1, "tid": base[row["id"]], "name": "started",
                     "cat": "spawn", "ts": at}]
    return out
