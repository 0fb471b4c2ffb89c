"""The one way anyone but the runner ends a subagent (docs/explanation/rules.md#the-trail: the first
terminal status is final); the runner's own is `TrailWriter.end`.

Imports `zapcli.trail.store`, `zapcli.trail.reader`, `zapcli.trail.model`.
"""

from __future__ import annotations

import time
from pathlib import Path

from zapcli.trail import reader, records, store
from zapcli.trail.model import FinalStatus, Outcome

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


def end(path: Path, outcome: Outcome, *, by: str | None = None, retries: float = 0.0,
        deny_pending: str | None = None, **extra: Any) -> tuple[FinalStatus | None, bool]:
    """End a subagent: append its terminal `status` unless one is already
    recorded (the first terminal status is final, docs/explanation/rules.md#the-trail), under the trail's
    lock. Returns (the final status record, whether this call wrote it); the
    record is None when nothing could be written (a full or read-only disk).
    `deny_pending`: the reason its pending approval request, if any, is
    settled as denied first (nobody will answer it once it has ended).

    This and `TrailWriter.end` (the runner's own) are the only ways a
    subagent ends. An ended subagent never starts, so the environment kept
    for its start goes too.
    """
    fields: dict[str, Any] = {"status": str(outcome.status), "exit_code": outcome.exit_code,
                              "reason": outcome.reason, "mono": time.monotonic()}
    if by is not None:
        fields["by"] = by
    fields.update(outcome.extra or {}, **extra)
    with store.locked(path):
        if deny_pending is None:
            final = reader.first_terminal(path)
        else:
            s = reader.summarize(reader.read(path))
            final = s.final if s is not None else None
            if final is None and s is not None and s.pending_approval is not None:
                store.append(path, "approval_decision", {
                    "req_id": s.pending_approval.get("req_id"), "decision": "deny",
                    "reason": deny_pending, "by": by})
        if final is not None:
            _drop_kept_env(path)
            return final, False
        seq = store.append(path, "status", fields, retries=retries)
    if seq is None:
        return None, False
    _drop_kept_env(path)
    from zapcli.trail import finish

    finish.fire(path)  # its on-finish command, once over everyone
    return FinalStatus.from_record({"v": records.SCHEMA_VERSION, "seq": seq, "type": "status",
                                    **fields}), True


def _drop_kept_env(path: Path) -> None:
    """An ended subagent never starts: the environment kept for its start
    (`<id>.env`, its spawner's keys; `zapcli.lifecycle.queue.keep_env`) goes
    now, whoever ended it (a failed `--after` dependency, a kill, the end of
    the run it belonged to)."""
    try:
        path.with_suffix(store.ENV).unlink(missing_ok=True)
    except OSError:
        pass  # a read-only folder: `gc` removes it once it can
