"""`trace export`, `export`, `timeline`: what was sent or written, and where."""

from __future__ import annotations

from typing import Any

from zapcli.render.common import Lines
from zapcli.render.docschema import stamp
from zapcli.render.text import counted


def export_lines(res: Any) -> Lines:
    out: Lines = [("bold", f"[SubAgent] sent {res.spans} spans of {res.subagents} subagent"
                           f"{'s' if res.subagents != 1 else ''} to {res.endpoint}")]
    out += [("dim", f"  trace of {tree}") for tree in res.trees]
    if res.unfinished:
        out.append(("yellow", f"  still running (their open spans are sent when they end): "
                              f"{' '.join(res.unfinished)}"))
    return out


def export_doc(res: Any) -> dict[str, Any]:
    return stamp("trace-export", {"endpoint": res.endpoint, "trees": res.trees, "subagents": res.subagents,
            "spans": res.spans, "unfinished": res.unfinished})



def written_lines(res: Any) -> Lines:
    what = {"atif": "ATIF trajectory", "perfetto": "Perfetto trace", "html": "timeline"}[res.format]
    runs: tuple[str, ...] = getattr(res, "runs", ())
    besides: int = getattr(res, "besides", 0)  # in no written run's tree (another session's)
    kids = counted(res.subagents - besides if runs else res.subagents, "subagent")
    if len(runs) == 1:
        kids = f"run {runs[0]} and its {kids}"
    elif runs:
        kids = f"{len(runs)} runs and their {kids}"
    if runs and besides:
        kids += f", and {counted(besides, 'other subagent')}"
    out: Lines = [("bold", f"[SubAgent] wrote the {what} of {kids}: {res.path}")]
    if res.format == "html":
        out.append(("dim", f"  open it in a browser: file://{res.path}"))
    elif res.format == "perfetto":
        out.append(("dim", "  open it at ui.perfetto.dev (Open trace file) or chrome://tracing"))
    return out


def written_doc(res: Any) -> dict[str, Any]:
    return stamp("written", {"path": res.path, "format": res.format, "subagents": res.subagents})
