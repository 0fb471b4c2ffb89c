"""`zapcli replay`: the trail, record by record, whatever became of the process.

Imports `zapcli.lifecycle`, `zapcli.trail`, `zapcli.ops.fold`. Returns parsed
entries (records, corrupt-line markers) and a note when a torn last line was
skipped. A shell command's work is its output, which no record holds: its
captured stdout and stderr come folded too, as `poll` folds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zapcli.errors import NotFound
from zapcli.trail import reader, removals, store

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.results import Folded
    from zapcli.trail.model import Corrupt


@dataclass
class ReplayResult:
    id: str
    entries: list[dict[str, Any] | Corrupt] = field(default_factory=list)  # records and corrupt lines
    torn_tail_bytes: int = 0
    tokens: dict[str, Any] | None = None  # the whole trail's figures, as poll and usage show them
    output: Folded | None = None  # a shell command's captured stdout, folded (else None)
    stderr: Folded | None = None  # and its stderr, when it wrote any


FIGURES = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd", "cache_write_tokens", "calls")


def replay(sid: str, *, since: int | None = None) -> ReplayResult:
    """Read the whole trail of `sid` — a subagent's, or a `zapcli run`'s own
    (`zapcli.trail.runs`: the same format). Raises NotFound for an unknown id."""
    from zapcli.trail import runs

    if runs.is_run_id(sid):
        if not runs.exists(sid):
            raise NotFound(runs.not_a_subagent(sid))
        path = runs.path_for(sid)
    else:
        sid = store.resolve(sid)
        path = store.path_for(sid)
    try:
        trail = reader.read(path)
    except OSError:
        raise NotFound(removals.missing(sid)) from None
    if not trail.entries and not trail.torn_tail:
        raise NotFound(f"{sid} does not exist (its trail is empty)")
    entries = trail.entries
    if since is not None:
        entries = [e for e in entries if not isinstance(e, dict) or (isinstance(e.get("seq"), int) and e["seq"] > since)]
    s = reader.summarize(trail)
    tokens = {k: getattr(s, k) for k in FIGURES} if s is not None and s.calls else None
    res = ReplayResult(sid, entries, len(trail.torn_tail), tokens)
    records = [e for e in trail.entries if isinstance(e, dict)]
    if records and records[0].get("type") == "spawn" and records[0].get("cli") == "sh":
        _fold_output(res, records)
    return res


def _fold_output(res: ReplayResult, records: list[dict[str, Any]]) -> None:
    """A shell command's output, folded as `poll` folds it; the bytes its
    end recorded say what was written (a file removed since is said so)."""
    from zapcli.ops.fold import fold_file

    ended: dict[str, Any] = next((r for r in reversed(records) if r.get("type") == "status"), {})
    written = {k: ended[k] for k in ("stdout_bytes", "stderr_bytes") if isinstance(ended.get(k), int)}
    res.output = fold_file(store.path_for(res.id, ".out"), written.get("stdout_bytes"))
    err = fold_file(store.path_for(res.id, ".err"), written.get("stderr_bytes"))
    if err.head or err.written:
        res.stderr = err
