"""`zapcli continue ID TEXT` (SPEC §16): a finished subagent goes on as a new
subagent that has its whole conversation, then TEXT.

Imports `zapcli.ops.spawn`, `zapcli.lifecycle.observe`, `zapcli.trail`. The new
subagent is spawned like any other (id at once, queue, deadline) with the old
one's frozen definition, model, grant, approval, working directory, tree
(`--worktree` carries over: same path and branch), output schema and
on-finish command, plus `continue_of: <old id>`; its runner rebuilds the
conversation from the old trail (`zapcli.backends.history`). The old trail
gets a `continued` record naming the new id, so the ids are linked both
ways. Never a subagent that has not ended; never twice (two successors
would share one tree).

What continuing means per backend: `zapcli` as above; `sh` is refused (a
shell command has no conversation: spawn a new one); the agent CLIs resume
their own session (SPEC §13) through `spawn`'s `continue_of`
(`zapcli.backends.resume`: the same CLI, config home, cwd and definition).
"""

from __future__ import annotations

from typing import Any

from zapcli.errors import UsageError, ZapcliError
from zapcli.lifecycle.observe import load, observe
from zapcli.ops.spawn import SpawnRequest, SpawnResult, spawn
from zapcli.trail import store

CARRIED = ("agent", "model", "definition", "grant", "diagnostics", "output_schema")


def _refuse_backend(sid: str, cli: str) -> None:
    if cli == "sh":
        raise UsageError(f"{sid} ran a shell command (--cli sh), which has no conversation to "
                         "continue; spawn a new subagent instead")


def continue_(sid: str, text: str, *, model: str | None = None, timeout_s: float | None = None,
              on_finish: str | None = None) -> SpawnResult:
    """Start the successor of `sid`. Raises NotFound, UsageError, ZapcliError;
    nothing is created when it does."""
    sid = store.resolve(sid)
    view = observe(sid)
    _refuse_backend(sid, view.cli)
    if not view.terminal:
        steer = f"steer it with `zapcli send {sid} TEXT`, or " if view.cli == "zapcli" else ""
        raise ZapcliError(f"{sid} is still {view.status}; only a finished subagent can be "
                          f"continued: {steer}wait for it (zapcli wait) or stop it (zapcli kill) "
                          "first", code="not_finished")
    path = store.path_for(sid)
    with store.locked(path):  # two `continue` of one id at once: one wins
        s = load(sid)
        _refuse_backend(sid, s.spawn.cli)
        if s.continued_by:
            raise ZapcliError(f"{sid} was already continued as {s.continued_by}; continue that "
                              "one instead", code="already_continued")
        if s.spawn.cli != "zapcli":  # an agent CLI resumes its own session
            res = spawn(SpawnRequest(task=text, cli=s.spawn.cli, model=model, timeout_s=timeout_s,
                                     continue_of=sid, on_finish=on_finish))
            store.append(path, "continued", {"by": res.id})
            return res
        raw = s.spawn.raw
        inherit: dict[str, Any] = {k: raw[k] for k in CARRIED if k in raw}
        if model is not None:
            inherit["model"] = model
        inherit["continue_of"] = sid
        if s.spawn.worktree is not None:
            inherit["worktree"] = {**s.spawn.worktree, "carried": True}
        hook = s.spawn.on_finish if on_finish is None else on_finish
        res = spawn(SpawnRequest(
            task=text, cli=s.spawn.cli, timeout_s=timeout_s, approval=s.spawn.approval,
            cwd=s.spawn.cwd, unattended=s.spawn.unattended, max_tokens=s.spawn.max_tokens,
            on_finish=hook if isinstance(hook, str) else "", inherit=inherit))
        store.append(path, "continued", {"by": res.id})
    return res
