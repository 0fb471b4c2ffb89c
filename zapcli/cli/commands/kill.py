"""`zapcli kill`: cancel subagents and their whole process trees."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.config import load_settings
from zapcli.ops.kill import kill


def execute(ids: list[str] | None = None, grace: float | None = None, all: bool = False,
            json: bool = False) -> int:
    entries = kill(list(ids or []), load_settings(), grace_s=grace, all_=all)
    if json:
        emit_json({"subagents": [{"id": e.id, "outcome": e.outcome, "pid": e.pid, "signals": e.signals,
                                  "error": e.error} for e in entries]})
    else:
        killed = [e for e in entries if e.outcome == "cancelled"]
        noun = "subagent" if len(killed) == 1 else "subagents"
        lines = [("bold", f"[SubAgent] terminated {len(killed)} {noun}" + (":" if entries else ""))]
        for e in entries:
            if e.outcome == "cancelled":
                how = f" ({e.signals} -> PID {e.pid})" if e.pid and e.signals else " (was queued)" if not e.pid else ""
                lines.append(("yellow", f"  {e.id}: cancelled{how}"))
            elif e.error:
                lines.append(("red", f"  {e.error}"))
            else:
                lines.append(("dim", f"  {e.id}: {e.outcome}, nothing to kill"))
        emit_lines(lines)
    return 1 if entries and all_failed(entries) else 0


def all_failed(entries: list) -> bool:
    return all(e.outcome == "does not exist" for e in entries)
