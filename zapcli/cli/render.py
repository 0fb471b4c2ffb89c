"""Result objects -> human lines or JSON documents. One place for every format.

Imports `zapcli.ops` result types only. Human lines are (style, text) pairs for
`output.emit_lines`; JSON documents are plain dicts with snake_case keys.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from zapcli.cli.output import escape_controls
from zapcli.ops.fold import Folded
from zapcli.ops.status import View

STATUS_STYLE = {"running": "cyan", "queued": "yellow", "awaiting_approval": "magenta",
                "completed": "green", "failed": "red", "timeout": "red", "cancelled": "yellow",
                "lost": "red", "interrupted": "red"}
TASK_PREVIEW = 40


def duration(seconds: float | None) -> str:
    """23s, 5m12s, 1h03m."""
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def one_line(text: str, limit: int | None = None) -> str:
    flat = " ".join(text.split())
    if limit and len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return escape_controls(flat)


def status_phrase(v: View) -> str:
    """`running (running for 23s)`, `completed (took 45s, exit 0)`, ..."""
    if v.status in ("running", "awaiting_approval"):
        extra = f"running for {duration(v.elapsed_s)}"
        if v.stalled_s is not None:
            return f"running (stalled {duration(v.stalled_s)})"
        return f"{v.status} ({extra})"
    if v.status == "queued":
        return "queued (waiting for " + ("dependencies / " if v.after else "") + "a free slot)"
    parts = [f"took {duration(v.elapsed_s)}"] if v.elapsed_s is not None else []
    if v.exit_code is not None:
        parts.append(f"exit {v.exit_code}")
    if v.reason and v.status != "completed":
        parts.append(one_line(v.reason, 120))
    return f"{v.status} ({', '.join(parts)})" if parts else v.status


def view_header(v: View) -> list[tuple[str, str]]:
    lines = [(STATUS_STYLE.get(v.status, ""), f"{v.id}: {status_phrase(v)}"),
             ("dim", f"  CLI: {v.cli}" + (f" (agent {v.agent})" if v.agent else "")),
             ("", f"  Task: {one_line(v.task, 100)}")]
    if v.pending_approval:
        req = v.pending_approval
        lines.append(("magenta", f"  Awaiting approval {req.get('req_id')}: {req.get('tool')}: "
                                 f"{one_line(str(req.get('summary', '')), 100)}"))
        lines.append(("dim", f"  Decide: zapcli approve {v.id} {req.get('req_id')} | zapcli deny {v.id} {req.get('req_id')}"))
    if v.input_tokens or v.output_tokens:
        lines.append(("dim", f"  Tokens: {v.input_tokens} in, {v.output_tokens} out"
                             + (f" ({v.cached_tokens} cached)" if v.cached_tokens else "")))
    return lines


def folded_lines(f: Folded) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    if f.truncated:
        lines.append(("bold red", f"  OUTPUT TRUNCATED ({f.written} bytes written, 1 MB kept)"))
    if not f.head:
        lines.append(("dim", "  (no output)"))
        return lines
    lines.append(("dim", "  Output:"))
    lines.extend(("", "    " + escape_controls(x)) for x in f.head.rstrip("\n").split("\n"))
    if f.folded_bytes:
        lines.append(("yellow", f"    … {f.folded_bytes} bytes folded (zapcli output ID shows everything) …"))
        lines.extend(("", "    " + escape_controls(x)) for x in f.tail.rstrip("\n").split("\n"))
    return lines


def view_json(v: View) -> dict[str, Any]:
    doc = asdict(v)
    doc["after"] = list(v.after)
    doc["terminal"] = v.terminal
    return doc


def folded_json(f: Folded) -> dict[str, Any]:
    return {"head": f.head, "tail": f.tail, "folded_bytes": f.folded_bytes,
            "kept_bytes": f.kept, "written_bytes": f.written, "truncated": f.truncated}
