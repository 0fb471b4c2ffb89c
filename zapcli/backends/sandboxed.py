"""The runner's side of the sandbox (SPEC §18) for the backends that run
commands themselves: the built-in agent's toolset and `--cli sh`.

Imports `zapcli.host.sandbox`, `zapcli.sandbox`, `zapcli.trail`. The spawn
record's `sandbox` ("auto", "on", "off") was decided at spawn; here the
policy is made from the frozen facts (approval mode, workspace or tree,
writable_roots, the definition's `sandbox:`), what it leaves out goes into
the trail as diagnostics, and one that was asked for and cannot be had
ends the subagent `failed` before anything runs.
"""

from __future__ import annotations

from typing import Any

from zapcli.host.sandbox import open_sandbox, prepare
from zapcli.trail import store
from zapcli.trail.model import Outcome, SpawnRecord, Status
from zapcli.trail.writer import TrailWriter


def _prepared(sid: str, spawn: SpawnRecord, writer: TrailWriter, *, mode: str,
              spec: Any) -> Any:
    prepared = prepare(str(spawn.raw.get("sandbox") or "off"), mode=mode,
                       workspace=spawn.workspace, writable_roots=spawn.writable_roots,
                       spec=spec, scratch=store.path_for(sid, store.TMP),  # made by the runner (C23)
                       tree=spawn.worktree)
    if prepared.refused:
        return Outcome(Status.FAILED, None, prepared.refused)
    for diag in prepared.diagnostics:
        writer.append("diagnostic", diag)
    return prepared


def agent_sandbox(sid: str, spawn: SpawnRecord, writer: TrailWriter) -> Any:
    """The built-in agent's sandbox (None: unsandboxed, said in a diagnostic
    unless `--no-sandbox` asked for that), or the `failed` Outcome."""
    from zapcli import children
    from zapcli.definitions.model import SandboxSpec

    prepared = _prepared(sid, spawn, writer, mode=spawn.approval,
                         spec=SandboxSpec.from_dict((spawn.definition or {}).get("sandbox")))
    if isinstance(prepared, Outcome):
        return prepared
    return open_sandbox(prepared, on_start=lambda pid: children.started(pid, "sandbox"))


def shell_prefix(ctx: Any) -> Any:
    """`--cli sh --sandbox`: the bwrap command line the shell goes after
    (empty: none), or the `failed` Outcome. It may write where `workspace`
    mode lets edits run; the network is off."""
    prepared = _prepared(ctx.sid, ctx.spawn, ctx.writer, mode="workspace", spec=None)
    if isinstance(prepared, Outcome):
        return prepared
    if prepared.policy is None:
        return ()
    from zapcli.sandbox import bwrap

    return tuple(bwrap.argv(prepared.policy, prepared.bwrap))
