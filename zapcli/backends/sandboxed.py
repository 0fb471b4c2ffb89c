"""The runner's side of the sandbox (docs/explanation/rules.md#sandbox) for the backends that run
commands themselves: the built-in agent's toolset and `--cli sh`; and the
policy an agent CLI runs in as a whole (`cli_policy`, built on by
`zapcli.backends.cli_sandbox`).

Imports `zapcli.host.sandbox`, `zapcli.sandbox`, `zapcli.trail`,
`zapcli.backends.registry` (the one list of control files, every backend's
included). The spawn record's `sandbox` ("auto", "on", "off") was decided at
spawn; here the policy is made from the frozen facts (approval mode,
workspace or tree, writable_roots, the definition's `sandbox:`), what it
leaves out goes into the trail as diagnostics, and one that was asked for
and cannot be had ends the subagent `failed` before anything runs.
"""

from __future__ import annotations

from zapcli.host.sandbox import open_sandbox, prepare
from zapcli.trail import store
from zapcli.trail.model import Outcome, SpawnRecord, Status
from zapcli.trail.writer import TrailWriter

TYPE_CHECKING = False  # `typing` costs a sandboxed runner ~3 ms: annotations only
if TYPE_CHECKING:
    from typing import Any


def _prepared(sid: str, spawn: SpawnRecord, writer: TrailWriter, *, mode: str,
              spec: Any, writes: bool = True) -> Any:
    from zapcli.backends.registry import control_files

    prepared = prepare(str(spawn.raw.get("sandbox") or "off"), mode=mode,
                       workspace=spawn.workspace, writable_roots=spawn.writable_roots,
                       spec=spec, scratch=store.path_for(sid, store.TMP),  # made by the runner (C23)
                       scratch_size=_size(spawn.raw.get("scratch_size")),
                       control=control_files(), tree=spawn.worktree,
                       pinned=spawn.raw.get("roots_real") or None,
                       ways=ways_out(spawn.cli, bool(spawn.worktree)), writes=writes)
    if prepared.refused:
        return Outcome(Status.FAILED, None, prepared.refused)
    for diag in prepared.diagnostics:
        writer.append("diagnostic", diag)
    return prepared


def ways_out(cli: str | None, worktree: bool) -> dict[str, bool]:
    """Which ways out of a control file that is a link fit a subagent
    (`zapcli.sandbox.links.ways_out`): `--approval full` not for `--cli sh`
    (its commands run in `workspace` mode whatever the approval),
    `--worktree` not when it has one. (`zapcli.ops.sandboxing.linked` says
    the same at spawn.)"""
    return {"full": cli != "sh", "worktree": not worktree}


def _size(value: Any) -> int | None:
    """The config's `scratch_size` as spawn froze it (bytes), if it did."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def agent_sandbox(sid: str, spawn: SpawnRecord, writer: TrailWriter) -> Any:
    """The built-in agent's sandbox (None: unsandboxed, said in a diagnostic
    unless `--no-sandbox` asked for that), or the `failed` Outcome."""
    from zapcli import children
    from zapcli.definitions.model import SandboxSpec

    tools = (spawn.grant or {}).get("tools")  # what it was granted (`zapcli.host.agent`)
    prepared = _prepared(sid, spawn, writer, mode=spawn.approval,
                         spec=SandboxSpec.from_dict((spawn.definition or {}).get("sandbox")),
                         writes=_writes(tools))
    if isinstance(prepared, Outcome):
        return prepared
    return open_sandbox(prepared, on_start=lambda pid: children.started(pid, "sandbox"))


def _writes(tools: Any) -> bool:
    """Whether granted `tools` can write in the workspace or run a command
    (no list: said as if they could)."""
    if not isinstance(tools, list):
        return True
    from zapcli.capabilities.delegation import WRITERS

    return any(str(t).lower() in WRITERS for t in tools)


def shell_box(ctx: Any) -> Any:
    """`--cli sh --sandbox`: (the sandbox's starts — `bwrap.Starts`: the
    command lines the shell goes after —, the held placeholders to release
    once it ended) — (None, None): no sandbox — or the `failed` Outcome. It may write where `workspace` mode
    lets edits run; the network is off; control files stay read-only."""
    prepared = _prepared(ctx.sid, ctx.spawn, ctx.writer, mode="workspace", spec=None)
    if isinstance(prepared, Outcome):
        return prepared
    if prepared.policy is None:
        return None, None
    from zapcli.host.sandbox import records
    from zapcli.sandbox import bwrap, placeholders

    try:
        held = placeholders.hold(prepared.policy, records())
    except OSError as exc:
        return Outcome(Status.FAILED, None, f"the sandbox could not hold the control files "
                                            f"read-only: {exc}; nothing was run")
    for note in held.notes:
        ctx.writer.append("diagnostic", {"dimension": "sandbox", "name": "placeholder",
                                         "message": note})
    return bwrap.Starts(lambda: bwrap.argv(held.policy, prepared.bwrap)), held


def after_it(spawn: SpawnRecord, choice: str, scratch: Any) -> Any:
    """A command run in a subagent's tree once it has ended (the `attempts`
    check: code an agent wrote): the sandbox `--cli sh --sandbox` runs in —
    writes only where `workspace` mode lets them (its tree), the network
    off, control files read-only. `choice` "auto" | "on" | "off" (as a
    spawn record's `sandbox`); `scratch` its scratch folder (made here).
    Returns (the sandbox's starts — `bwrap.Starts`: the command lines the
    shell goes after —, the held placeholders to release once it ended,
    notes): (None, None, notes) when it runs unsandboxed; or the refusal (a str) when one asked for cannot be had."""
    return _box(choice, spawn.workspace, spawn.writable_roots, None, scratch, spawn.cwd)


def _box(choice: str, workspace: str, roots: Any, spec: Any, scratch: Any, cwd: str) -> Any:
    """`after_it`'s sandbox for any command run in agent work after it
    ended: `workspace` mode on `workspace` and `roots`, the network as
    `spec` says (None: off), control files held, started in `cwd`."""
    from zapcli.backends.registry import control_files
    from zapcli.host.sandbox import prepare, records
    from zapcli.sandbox import bwrap, placeholders

    prepared = prepare(choice, mode="workspace", workspace=workspace, writable_roots=roots,
                       spec=spec, scratch=scratch, control=control_files(),
                       ways={"full": False, "worktree": False, "unsandboxed": False})
    if prepared.refused:
        return prepared.refused
    notes = [d["message"] for d in prepared.diagnostics]
    if prepared.policy is None:
        return None, None, notes
    try:
        held = placeholders.hold(prepared.policy, records())
    except OSError as exc:
        return f"the sandbox could not hold the control files read-only: {exc}"
    def line() -> list[str]:
        *box, end = bwrap.argv(held.policy, prepared.bwrap)  # it starts in its folder, not $HOME
        return [*box, "--chdir", cwd, end]
    return bwrap.Starts(line), held, [*notes, *held.notes]


STRICTEST = ("on", "auto", "off")  # a spawn record's `sandbox`, the strictest first


def tree_box(spawns: list[SpawnRecord], tree: str, scratch: Any) -> Any:
    """The person's command run on the files agent work left in `tree` —
    `worktree.teardown` (`make -s clean` runs the Makefile it left), and
    `worktree.setup` in a continued subagent's tree made again from its
    branch — runs in the sandbox that work had: writable the tree alone, the
    network as its subagent's (`--cli sh`: off; the built-in agent: its
    definition's; an agent CLI: on unless its definition says off), control
    files held, no key in its environment. Of several subagents that had the
    tree (a `continue`), the strictest: sandboxed if any was, the network on
    only if every one had it. Only when every one ran unsandboxed
    (`--no-sandbox`, `--cli sh` without `--sandbox`: they could write
    anything the person can, and nothing is kept from them by sandboxing
    their tree's commands) does it run as before, as the person, with the
    person's environment; so too where `auto` finds no sandbox now, as that
    work's own start did. Returns `after_it`'s (starts, held, notes) and the
    environment (None: the person's), or the refusal (a str): then it must
    not run."""
    choices = [str(s.raw.get("sandbox") or "off") for s in spawns]
    choice = next((c for c in STRICTEST if c in choices), "off")
    if choice == "off":
        return None, None, [], None
    boxed = [s for s in spawns if s.raw.get("sandbox") in ("on", "auto")]
    return _tree(choice, all(_network(s) for s in boxed), tree, scratch)


def made_box(spawn: SpawnRecord, tree: str, scratch: Any) -> Any:
    """`worktree.setup` in a NEW tree that may hold agent work's files
    (`zapcli.agentroots.repo_worked`: `sub/.git` below a workspace, whose
    commits are that work's; `written`: an ignored file `.worktreeinclude`
    copied in from a folder agent work was given): `tree_box`'s sandbox, always — asked
    for whatever `spawn`'s own choice, so one that cannot be had now is the
    refusal, and the setup does not run. The network is the one `spawn`'s
    own work will have in the tree (on when it runs unsandboxed): a setup
    installs dependencies (`npm ci`, `uv sync`) for that work, and gets no
    way out that work does not get. Returns `tree_box`'s."""
    network = spawn.raw.get("sandbox") not in ("on", "auto") or _network(spawn)
    return _tree("on", network, tree, scratch)


def _tree(choice: str, network: bool, tree: str, scratch: Any) -> Any:
    """The one sandbox of a person's command on a tree's files: writable the
    tree alone, the network as said, control files held, keyless."""
    from zapcli.backends.shell import model_shell_env
    from zapcli.definitions.model import SandboxSpec

    box = _box(choice, tree, (), SandboxSpec(network=network), scratch, tree)
    if isinstance(box, str):
        return box
    return (*box, model_shell_env({"env": []}) if box[0] is not None else None)


def _network(spawn: SpawnRecord) -> bool:
    """Whether the sandbox of `spawn`'s work let it reach the network."""
    from zapcli.definitions.model import SandboxSpec

    if spawn.cli == "sh":  # `shell_box`
        return False
    spec = SandboxSpec.from_dict((spawn.definition or {}).get("sandbox"))
    if spawn.cli in ("", "zapcli"):  # `agent_sandbox`
        return bool(spec and spec.network)
    return spec is None or bool(spec.network)  # `cli_policy`


def cli_policy(ctx: Any) -> Any:
    """The policy an agent CLI's whole process starts from: its commands'
    rules for its approval mode and definition (None: unsandboxed, said in a
    diagnostic unless `--no-sandbox` asked for that), or the `failed`
    Outcome. Its network is on unless the definition's `sandbox:` leaves it
    off: the CLI itself must reach its model."""
    from zapcli.definitions.model import SandboxSpec

    spec = SandboxSpec.from_dict((ctx.spawn.definition or {}).get("sandbox"))
    spec = SandboxSpec(network=True) if spec is None else spec
    return _prepared(ctx.sid, ctx.spawn, ctx.writer, mode=ctx.spawn.approval, spec=spec)
