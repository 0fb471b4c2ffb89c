"""A trail without its `spawn` record (its first line deleted, the file
emptied or overwritten): what can still be said of it, whether its runner
still runs (ops.remove removes its files).

Imports `zapcli.trail`, `zapcli.supervisor.liveness`.
Such a trail is no subagent any command can read, but its files are there
and its runner may be too: `list` names it (with the reason), `rm` removes
its files once no recorded process of it is alive, `kill` stops that
process. The pid is trusted only with its create time (identity), as
everywhere; a trail without a `process` or `start` record has nothing alive.
"""

from __future__ import annotations

from zapcli.plain import plain
from zapcli.trail import reader, store
from zapcli.trail.model import ProcessRecord, RunnerRecord, StartRecord

FRESH_S = 5.0  # `spawn` creates the trail, then writes its first line: an empty one younger is left be

@plain
class Found:
    id: str
    reason: str
    process: RunnerRecord | None = None  # the latest `process`/`start` record with a pid
    alive: bool = False
    fresh: bool = False  # empty and just made: maybe a spawn between creating and writing it


def inspect(sid: str) -> Found | None:
    """What is known of a damaged trail; None when it is not damaged (or gone)."""
    try:
        trail = reader.read(store.path_for(sid))
    except OSError:
        return None
    if reader.summarize(trail) is not None:
        return None
    proc: RunnerRecord | None = None
    for rec in trail.records:
        if rec.get("type") in ("process", "start") and isinstance(rec.get("pid"), int):
            proc = (ProcessRecord if rec["type"] == "process" else StartRecord).from_record(rec)
    found = Found(sid, reader.damage(trail), proc, fresh=not trail.size and _age(sid) < FRESH_S)
    if proc is not None:
        from zapcli.supervisor.liveness import is_alive

        found.alive = is_alive(proc.pid, proc.create_time)
    return found


def _age(sid: str) -> float:
    import os
    import time

    try:
        return time.time() - os.stat(store.path_for(sid), follow_symlinks=False).st_mtime
    except OSError:
        return 0.0

