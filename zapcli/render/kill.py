"""`kill`: what was stopped, how, and what was not there to stop."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines, one_line
from zapcli.render.docschema import stamp


def lines(entries: list[Any]) -> Lines:
    killed = [e for e in entries if e.stopped]
    runs = sum(1 for e in killed if e.id.startswith("run_"))  # `zapcli kill run_…`: a run
    subs = len(killed) - runs
    said = [f"{n} {word}{'' if n == 1 else 's'}" for n, word in ((subs, "subagent"), (runs, "run"))
            if n or (word == "subagent" and not runs)]
    out: Lines = [("bold", f"[SubAgent] terminated {' and '.join(said)}" + (":" if entries else ""))]
    for e in entries:
        if e.stopped:
            how = (f" ({e.signals} -> PID {e.pid})" if e.pid and e.signals else "" if e.pid
                   else f" ({e.signals})" if e.signals else " (was queued)")
            out.append(("yellow", f"  {e.id}: {e.outcome}{how}"))
            if e.error:
                out.append(("red", f"    {one_line(e.error, 200)}"))
        elif e.error:
            out.append(("red", f"  {one_line(e.error, 200)}"))
        else:
            out.append(("dim", f"  {e.id}: {e.outcome}, nothing to kill"))
    return out


def doc(entries: list[Any]) -> dict[str, Any]:
    return stamp("kill", {"subagents": [{"id": e.id, "outcome": e.outcome, "pid": e.pid, "signals": e.signals,
                           "error": e.error} for e in entries]})
