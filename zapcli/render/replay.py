"""`replay`: a trail record by record, each as one readable line."""

from __future__ import annotations

from typing import Any

import orjson

from zapcli.redact import display
from zapcli.render.common import Lines, task_line
from zapcli.render.docschema import stamp
from zapcli.render.text import escape_controls

RESULT_SHOWN = 2000  # characters of a tool result; `replay --raw` has all


def _indented(text: str, width: int) -> str:
    """Continuation lines under the first one, not flush left."""
    return text.replace("\n", "\n" + " " * width)


def record_line(rec: dict[str, Any]) -> tuple[str, str]:
    """One record as (style, text), every control character escaped: any
    field may hold what a model or an agent CLI sent (a tool's name, a
    session id)."""
    style, text = _record_line(rec)
    return style, _indented(escape_controls(text.rstrip("\n")), 5)


def _forked(rec: dict[str, Any]) -> str:
    """A fork's spawn: whose conversation its first request began with (`ops.fork`)."""
    fork = rec.get("fork")
    if not isinstance(fork, dict):
        return ""
    said = fork.get("messages")
    size = f" ({len(said)} messages of its conversation)" if isinstance(said, list) else ""
    return f"fork={rec.get('parent') or 'its run'}{size} "


def _record_line(rec: dict[str, Any]) -> tuple[str, str]:
    t = rec.get("type")
    pre = f"{rec.get('seq', '?'):>4} {str(rec.get('ts', ''))[11:23]} "
    if t == "spawn":
        sandbox = f"sandbox={rec['sandbox']} " if isinstance(rec.get("sandbox"), str) else ""
        return "bold", pre + (f"spawn  cli={rec.get('cli')} agent={rec.get('agent') or '-'} "
                              + (f"timeout={rec['timeout_s']:g}s " if isinstance(
                                  rec.get("timeout_s"), (int, float)) else "")
                              + f"{sandbox}{_forked(rec)}task: "
                              f"{task_line(display(str(rec.get('task', ''))), 200)}")
    if t in ("process", "start"):
        if rec.get("pid") is None and rec.get("address"):  # a runner on a cluster (docs/explanation/rules.md#remote-execution)
            return "dim", pre + f"{t:<6} {rec.get('executor')} pool {rec.get('pool')} at {rec.get('address')}"
        return "dim", pre + f"{t:<6} pid {rec.get('pid')}" + (" on its node" if "node_seq" in rec else "")
    if t == "collected":
        what = "everything came home" if rec.get("complete") else "what could come home did"
        return "dim", pre + f"collected: {what} ({escape_controls(str(rec.get('reason') or ''))})"
    if t in ("text", "thinking"):
        who = f" [in {rec['parent_call_id']}]" if rec.get("parent_call_id") else ""
        return (("italic dim" if t == "thinking" else ""),
                pre + f"{t}{who}: " + escape_controls(str(rec.get("delta", ""))))
    if t == "tool_call":
        args = orjson.dumps(rec.get("arguments")).decode()
        return "cyan", pre + f"tool_call {rec.get('name')} {escape_controls(args)[:400]}"
    if t == "tool_result":
        ok = "ok" if rec.get("ok") else "ERROR"
        content = escape_controls(str(rec.get("content", "")))
        more = (f"\n… {len(content) - RESULT_SHOWN} more characters (replay --raw shows all)"
                if len(content) > RESULT_SHOWN else "")
        waited = rec.get("approval_wait_ms")
        took = f"{rec.get('duration_ms')} ms" + (f", {waited} ms waiting for approval" if waited else "")
        body = content[:RESULT_SHOWN] + more
        return (("green" if rec.get("ok") else "red"),
                pre + f"tool_result {ok} ({took}):" + ("\n" if "\n" in body else " ") + body)
    if t == "usage":
        from types import SimpleNamespace

        from zapcli.render.common import tokens_text

        figures = SimpleNamespace(**{k: rec.get(k) or 0 for k in (
            "input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens")},
            cost_usd=rec["cost_usd"] if isinstance(rec.get("cost_usd"), (int, float)) else None)
        return "dim", pre + f"usage {rec.get('model')}: {tokens_text(figures)}"
    if t == "session":  # an agent CLI's own session (docs/explanation/rules.md#agent-clis)
        return "dim", pre + (f"session {rec.get('cli')} {rec.get('version') or '(version unknown)'} "
                             f"id {rec.get('session_id')} model {rec.get('model') or '-'}")
    if t == "notice":  # what the loop told the model (its subagents' ends, a rejected answer)
        return "yellow", pre + f"notice ({rec.get('source')}): " + escape_controls(str(rec.get("text", "")))
    if t == "report":
        return "bold", pre + "report:\n" + escape_controls(str(rec.get("text", "")).rstrip("\n"))
    if t == "status":
        extra = ", ".join(f"{k} {rec.get(k)}" for k in ("exit_code", "reason") if rec.get(k) is not None)
        return "bold", pre + f"status {rec.get('status')}" + (f" ({escape_controls(extra)})" if extra else "")
    rest = {k: v for k, v in rec.items() if k not in ("v", "seq", "ts", "type")}
    return "", pre + f"{t} " + escape_controls(orjson.dumps(rest).decode())[:1000]


def lines(res: Any) -> Lines:
    out: Lines = [("bold", f"[SubAgent] replay of {res.id}")]
    for e in res.entries:
        if isinstance(e, dict):
            out.append(record_line(e))
        else:  # a trail.model.Corrupt
            text = escape_controls(e.text)
            out.append(("red", f"   ? {text}" if e.line == 0 else  # the unread middle of a giant
                        f"   ? corrupt line {e.line} skipped: {text[:120]}"))
    if res.output is not None:  # a shell command: its work is its output, which no record holds
        from zapcli.render.common import folded_lines

        out += folded_lines(res.output, sid=res.id)
        if res.stderr is not None:
            out += folded_lines(res.stderr, sid=res.id, stream="Stderr")
    if res.tokens:
        from types import SimpleNamespace

        from zapcli.render.common import tokens_text

        t = SimpleNamespace(**res.tokens)
        out.append(("bold", f"tokens in all: {tokens_text(t)} in {t.calls} model call"
                            + ("s" if t.calls != 1 else "")))
    return out


def doc(res: Any) -> dict[str, Any]:
    return stamp("replay", {"id": res.id, "records": [e for e in res.entries if isinstance(e, dict)],
            "corrupt_lines": [e.line for e in res.entries if not isinstance(e, dict)],
            "torn_tail_bytes": res.torn_tail_bytes, "tokens": res.tokens})
