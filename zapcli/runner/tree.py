"""The runner's side of `--worktree`: make (or, for a continued subagent,
take over) the subagent's tree before its work starts, and point the work
at it.

Imports `zapcli.worktrees`, `zapcli.trail`. The tree is made here, in the
runner, not in `spawn`: `spawn` stays a ~50 ms command that prints the id at
once (a checkout of a large repository takes far longer), a queued or
`--after` subagent holds no tree while it waits, and a failure ends the
subagent `failed` with git's message like any other failure of its work.
The base commit is fixed at spawn time, so the tree starts from the HEAD
the caller saw, however long the subagent was queued.
"""

from __future__ import annotations

import os
import time

from zapcli import plain
from zapcli.trail.model import Outcome, SpawnRecord, Status
from zapcli.trail.writer import TrailWriter


def enter(spawn: SpawnRecord, writer: TrailWriter) -> tuple[SpawnRecord, Outcome | None]:
    """(the spawn record as the work sees it, None) once the tree is ready —
    its `cwd` and `workspace` are in the tree — or (spawn, a `failed`
    outcome) when the tree could not be made; then the work never starts
    (and never in the main checkout)."""
    from zapcli.worktrees import git as g
    from zapcli.worktrees.create import attach, create

    r = g.Receipt.from_dict(spawn.worktree)
    if r is None:
        return spawn, None
    started = time.monotonic()
    waited = 0.0
    try:
        if (spawn.worktree or {}).get("carried"):
            how = attach(r)
        else:
            waited = create(r)
            how = "created"
    except g.GitError as exc:
        writer.write_sync("worktree", {**r.to_dict(), "ok": False, "error": exc.message})
        return spawn, Outcome(Status.FAILED, None, f"worktree: git worktree add failed: {exc.message}")
    writer.write_sync("worktree", {**r.to_dict(), "ok": True, "how": how,
                                   "ms": int((time.monotonic() - started) * 1000),
                                   "lock_wait_ms": int(waited * 1000)})
    cwd = r.cwd if os.path.isdir(r.cwd) else r.path  # a folder the base commit does not have
    raw = {**spawn.raw, "cwd": cwd, "workspace": r.path}
    return plain.replace(spawn, cwd=cwd, workspace=r.path, raw=raw), None
