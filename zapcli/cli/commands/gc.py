"""`zapcli gc`: retention on demand."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_lines
from zapcli.config import load_settings
from zapcli.lifecycle.retention import collect


def execute(dry_run: bool = False, json: bool = False) -> int:
    res = collect(load_settings(), dry_run=dry_run)
    if json:
        emit_json({"dry_run": dry_run, "kept": res.kept, "deleted": res.deleted,
                   "trimmed": res.trimmed, "skipped_reason": res.skipped_reason})
        return 0
    verb = "would delete" if dry_run else "deleted"
    lines = [("bold", f"[SubAgent] gc: {verb} {len(res.deleted)}, kept {res.kept}")]
    if res.skipped_reason:
        lines.append(("yellow", f"  skipped: {res.skipped_reason}"))
    lines += [("dim", f"  {sid}: {verb}") for sid in res.deleted]
    trim = "would trim about" if dry_run else "trimmed"
    lines += [("dim", f"  {sid}: {trim} {n} bytes") for sid, n in res.trimmed.items()]
    emit_lines(lines)
    return 0
