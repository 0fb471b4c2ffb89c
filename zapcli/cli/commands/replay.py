"""`zapcli replay`: render a trail record by record (or print it raw)."""

from __future__ import annotations

import sys

import orjson

from zapcli.cli.output import emit_bytes, emit_json, emit_lines, escape_controls
from zapcli.cli.render import one_line
from zapcli.ops.replay import replay
from zapcli.redact import display


def _line(rec: dict) -> tuple[str, str]:
    t = rec.get("type")
    ts = str(rec.get("ts", ""))[11:23]
    pre = f"{rec.get('seq', '?'):>4} {ts} "
    if t == "spawn":
        return "bold", pre + f"spawn  cli={rec.get('cli')} agent={rec.get('agent') or '-'} timeout={rec.get('timeout_s')}s task: {one_line(display(str(rec.get('task', ''))), 200)}"
    if t in ("process", "start"):
        return "dim", pre + f"{t:<6} pid {rec.get('pid')}"
    if t in ("text", "thinking"):
        return ("italic dim" if t == "thinking" else ""), pre + f"{t}: " + escape_controls(str(rec.get("delta", "")))
    if t == "tool_call":
        args = orjson.dumps(rec.get("arguments")).decode()
        return "cyan", pre + f"tool_call {rec.get('name')} {escape_controls(args)[:400]}"
    if t == "tool_result":
        ok = "ok" if rec.get("ok") else "ERROR"
        content = escape_controls(str(rec.get("content", "")))
        more = f"\n     … {len(content) - 2000} more characters (replay --raw shows all)" if len(content) > 2000 else ""
        return ("green" if rec.get("ok") else "red"), pre + f"tool_result {ok} ({rec.get('duration_ms')} ms): " + content[:2000] + more
    if t == "usage":
        return "dim", pre + f"usage {rec.get('model')}: {rec.get('input_tokens')} in, {rec.get('output_tokens')} out, {rec.get('cached_tokens')} cached"
    if t == "report":
        return "bold", pre + "report:\n" + escape_controls(str(rec.get("text", "")))
    if t == "status":
        extra = ", ".join(f"{k} {rec.get(k)}" for k in ("exit_code", "reason") if rec.get(k) is not None)
        return "bold", pre + f"status {rec.get('status')}" + (f" ({escape_controls(extra)})" if extra else "")
    rest = {k: v for k, v in rec.items() if k not in ("v", "seq", "ts", "type")}
    return "", pre + f"{t} " + escape_controls(orjson.dumps(rest).decode())[:1000]


def execute(id: str, raw: bool = False, since: int | None = None, json: bool = False) -> int:
    res = replay(id, since=since)
    records = [e for e in res.entries if isinstance(e, dict)]
    corrupt = [e for e in res.entries if not isinstance(e, dict)]
    if json:
        emit_json({"id": id, "records": records, "corrupt_lines": [e[1] for e in corrupt],
                   "torn_tail_bytes": res.torn_tail_bytes})
        return 0
    if raw:
        emit_bytes(b"".join(orjson.dumps(e) + b"\n" for e in res.entries if isinstance(e, dict)))
    else:
        lines = [("bold", f"[SubAgent] replay of {id}")]
        for e in res.entries:
            if isinstance(e, dict):
                lines.append(_line(e))
            else:
                lines.append(("red", f"   ? corrupt line {e[1]} skipped: {escape_controls(e[2])[:120]}"))
        emit_lines(lines)
    if res.torn_tail_bytes:
        sys.stderr.write(f"zapcli: note: 1 incomplete record at the end of the trail was ignored ({res.torn_tail_bytes} bytes)\n")
    return 0
