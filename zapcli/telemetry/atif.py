"""ATIF v1.7 (the Agent Trajectory Interchange Format Harbor publishes) from
trails: one trajectory per subagent or run, its descendants embedded in
`subagent_trajectories` and referenced from the step that started them.

Imports `zapcli.telemetry.tree`, `zapcli.redact`, `zapcli.trail`. The trail
stays the source of truth: this is a view of it, written on demand.
Steps: the definition's prompt (system), the task (user), then one agent step
per model call (its text, reasoning, tool calls, their results as the
observation, its tokens as metrics); a message given while it ran (`send`)
is a user step. An `sh` subagent is one deterministic agent step (no model
call) running its command.
"""

from __future__ import annotations

from typing import Any

from zapcli import __version__
from zapcli.redact import display
from zapcli.telemetry.tree import Node
from zapcli.trail import store
from zapcli.trail.model import Status, is_terminal

VERSION = "ATIF-v1.7"
OUTPUT_MAX_BYTES = 16 * 1024  # an sh command's output in its observation (head and tail)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _Steps:
    """Agent steps as the records come: a model call opens one; its tool
    calls and their results join it."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None
        self.results: dict[str, dict[str, Any]] = {}  # call id -> its observation result
        self.totals = [0, 0, 0]
        self.cost: float | None = None

    def _agent(self, ts: Any) -> dict[str, Any]:
        cur = self.current
        if cur is None or cur.get("_closed"):
            cur = {"source": "agent", "timestamp": ts, "message": "", "_text": [], "_reason": []}
            self.steps.append(cur)
            self.current = cur
        return cur

    def add(self, rec: dict[str, Any]) -> None:
        rtype, ts = rec.get("type"), rec.get("ts")
        if rtype in ("text", "thinking"):
            cur = self._agent(ts)
            if cur.get("metrics") is not None or cur.get("tool_calls"):
                cur["_closed"] = True
                cur = self._agent(ts)
            cur["_text" if rtype == "text" else "_reason"].append(str(rec.get("delta") or ""))
        elif rtype == "usage":
            self._usage(rec, ts)
        elif rtype == "tool_call":
            self._call(rec, ts)
        elif rtype == "tool_result":
            result = self.results.get(str(rec.get("call_id")))
            if result is not None:
                content = display(str(rec.get("content") or ""))
                result["content"] = content if rec.get("ok") is not False else f"Error: {content}"
        elif rtype in ("steer", "notice") and (rtype == "notice" or rec.get("delivered")):
            self.steps.append({"source": "user", "timestamp": ts, "message": display(str(rec.get("text") or ""))})
            self.current = None

    def _usage(self, rec: dict[str, Any], ts: Any) -> None:
        cur = self._agent(ts)
        if cur.get("metrics") is not None or cur.get("tool_calls"):
            cur["_closed"] = True
            cur = self._agent(ts)
        ins, outs, cached = (_int(rec.get(k)) for k in ("input_tokens", "output_tokens", "cached_tokens"))
        metrics: dict[str, Any] = {"prompt_tokens": ins, "completion_tokens": outs, "cached_tokens": cached}
        cost = rec.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            metrics["cost_usd"] = float(cost)
            self.cost = (self.cost or 0.0) + float(cost)
        cur["metrics"], cur["llm_call_count"] = metrics, 1
        if isinstance(rec.get("model"), str):
            cur["model_name"] = rec["model"]
        for i, n in enumerate((ins, outs, cached)):
            self.totals[i] += n

    def _call(self, rec: dict[str, Any], ts: Any) -> None:
        cur = self._agent(ts)
        call_id = str(rec.get("call_id") or f"call_{len(self.results) + 1}")
        args = rec.get("arguments")
        cur.setdefault("tool_calls", []).append({
            "tool_call_id": call_id, "function_name": str(rec.get("name") or "tool"),
            "arguments": args if isinstance(args, dict) else {"raw": str(args or "")}})
        result = {"source_call_id": call_id, "content": None}
        cur.setdefault("observation", {"results": []})["results"].append(result)
        self.results[call_id] = result

    def finish(self) -> list[dict[str, Any]]:
        for step in self.steps:
            if step.get("source") != "agent":
                continue
            step["message"] = "".join(step.pop("_text", []))
            reason = "".join(step.pop("_reason", []))
            if reason:
                step["reasoning_content"] = reason
            step.pop("_closed", None)
        return self.steps


def _sh_steps(node: Node, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = next((r for r in records if r.get("type") == "start"), None)
    end = next((r for r in records if r.get("type") == "status" and is_terminal(r.get("status"))), None)
    if start is None:
        return []
    try:
        out, _ = store.read_bounded(store.path_for(node.id, ".out"), OUTPUT_MAX_BYTES)
    except OSError:
        out = b""
    text = out.decode("utf-8", "replace")
    return [{"source": "agent", "timestamp": start.get("ts"), "message": "", "llm_call_count": 0,
             "tool_calls": [{"tool_call_id": "sh", "function_name": "sh",
                             "arguments": {"command": display(str(node.spawn.get("task") or ""))}}],
             "observation": {"results": [{"source_call_id": "sh", "content": text}]},
             "extra": {"exit_code": (end or {}).get("exit_code")}}]


def _refer(steps: list[dict[str, Any]], child: Node) -> None:
    """Point at `child` from the observation that mentions its id (the spawn
    tool's answer, an `sh` command's output), else from a closing system step."""
    ref = {"trajectory_id": child.id, "session_id": str(child.spawn.get("session") or "")}
    for step in steps:
        for result in (step.get("observation") or {}).get("results", []):
            if child.id in str(result.get("content") or ""):
                result.setdefault("subagent_trajectory_ref", []).append(ref)
                return
    last = steps[-1] if steps else None
    if last is None or last.get("source") != "system" or not last.get("extra", {}).get("zapcli_children"):
        last = {"source": "system", "timestamp": child.spawn.get("ts"),
                "message": "subagents started from this one's work", "observation": {"results": []},
                "extra": {"zapcli_children": True}}
        steps.append(last)
    last["observation"]["results"].append({"content": f"started {child.id}", "subagent_trajectory_ref": [ref]})


def trajectory(node: Node, *, embedded: bool = False) -> dict[str, Any]:
    """The ATIF document of `node` and its descendants (`embedded`: as an
    element of its parent's `subagent_trajectories`)."""
    spawn = node.spawn
    records = node.records()
    definition: dict[str, Any] = spawn["definition"] if isinstance(spawn.get("definition"), dict) else {}
    steps: list[dict[str, Any]] = []
    if isinstance(definition.get("prompt"), str) and definition["prompt"].strip():
        steps.append({"source": "system", "timestamp": spawn.get("ts"), "message": definition["prompt"]})
    steps.append({"source": "user", "timestamp": spawn.get("ts"), "message": display(str(spawn.get("task") or ""))})
    acc = _Steps()
    if spawn.get("cli") == "sh":
        steps += _sh_steps(node, records)
    else:
        for rec in records[1:]:
            acc.add(rec)
        steps += acc.finish()
    children = [trajectory(c, embedded=True) for c in node.children]
    for child in node.children:
        _refer(steps, child)
    for i, step in enumerate(steps, 1):
        step["step_id"] = i
    return _document(node, records, steps, acc, children, embedded)


def _document(node: Node, records: list[dict[str, Any]], steps: list[dict[str, Any]], acc: _Steps,
              children: list[dict[str, Any]], embedded: bool) -> dict[str, Any]:
    spawn = node.spawn
    final = next((r for r in records if r.get("type") == "status" and is_terminal(r.get("status"))), None)
    version = next((r.get("version") for r in records if r.get("type") == "session"
                    and isinstance(r.get("version"), str)), None)
    cost = acc.cost
    for child in children:
        child_cost = (child.get("final_metrics") or {}).get("total_cost_usd")
        if isinstance(child_cost, float):
            cost = (cost or 0.0) + child_cost
    doc: dict[str, Any] = {
        "schema_version": VERSION, "trajectory_id": node.id,
        "agent": {"name": str(spawn.get("cli") or "zapcli"), "version": version or __version__,
                  **({"model_name": spawn["model"]} if isinstance(spawn.get("model"), str) else {}),
                  "extra": {"definition": spawn.get("agent"), "zapcli_version": __version__}},
        "steps": [{k: v for k, v in s.items() if v is not None} for s in steps],
        "final_metrics": {"total_prompt_tokens": acc.totals[0], "total_completion_tokens": acc.totals[1],
                          "total_cached_tokens": acc.totals[2], "total_steps": len(steps),
                          **({"total_cost_usd": cost} if cost is not None else {})},
        "extra": {"zapcli": {"id": node.id, "session": spawn.get("session"), "cli": spawn.get("cli"),
                             "status": (final or {}).get("status"), "reason": (final or {}).get("reason"),
                             "exit_code": (final or {}).get("exit_code"), "created": spawn.get("ts"),
                             "ended": (final or {}).get("ts")}},
    }
    if not embedded or spawn.get("session"):
        doc["session_id"] = str(spawn.get("session") or node.id)
    if final is not None and final.get("status") != Status.COMPLETED:
        doc["notes"] = f"ended {final.get('status')}: {final.get('reason') or 'no reason recorded'}"
    if children:
        doc["subagent_trajectories"] = children
    return doc
