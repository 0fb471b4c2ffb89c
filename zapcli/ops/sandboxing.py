"""Whether a subagent's commands run in zapcli's OS sandbox (docs/explanation/rules.md#sandbox): the
spawn record's `sandbox` field, decided at spawn from what was asked and
the backend's `sandbox_default` fact.

Imports `zapcli.errors`, `zapcli.paths`; `zapcli.sandbox.probe` only to ask
this machine whether it can; `zapcli.sandbox.links`, `zapcli.approvals` and
`zapcli.control` (the names no backend owns) for what the sandbox's start
would refuse (`linked`), said at spawn.
"""

from __future__ import annotations

from zapcli.errors import UsageError, ZapcliError, param

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHOICES = ("auto", "on", "off")


def choose(asked: str | None, backend: Any, network: bool = False) -> tuple[str, tuple[str, ...]]:
    """("auto" | "on" | "off", warnings). `asked`: --sandbox "on", --no-sandbox
    "off", None for the backend's default; `network`: the definition lets
    its commands reach the network. The default that cannot be had here is a
    warning (said at once, and again in the trail: never a silent
    downgrade); one asked for that cannot be had raises ZapcliError. So is a
    network namespace this machine cannot make for a definition without
    network: the rest of the sandbox holds, and spawn says the network does
    not."""
    default = backend.sandbox_default
    choice = asked or default or "off"
    if choice not in CHOICES:
        raise UsageError(f"{param('sandbox')} is one of {', '.join(CHOICES)}; got {choice!r}")
    if default is None:  # an agent CLI runs its commands its own way
        if choice == "on":
            raise UsageError(f"{param('sandbox')} is for backends whose commands zapcli runs; "
                             f"{backend.name} runs its commands its own way (see docs/how-to/agent-clis.md#sandbox)")
        return "off", ()
    if choice == "off":
        return "off", ()
    from zapcli.paths import state_dir
    from zapcli.sandbox import probe as bwrap  # the kept answer: no command line built here

    found = bwrap.cached(state_dir())
    if found.ok and not network and not found.network:
        if choice == "on":
            raise ZapcliError(f"{param('sandbox')} was asked for with the network off, but "
                              f"{found.network_missing}; {bwrap.NET_HINT}. Nothing was created",
                              code="no_sandbox")
        return choice, (bwrap.network_open(found),)
    if found.ok:
        return choice, ()
    if choice == "on":
        raise ZapcliError(f"{param('sandbox')} was asked for, but {found.missing}; {found.fix}. "
                          "Nothing was created", code="no_sandbox")
    return choice, (bwrap.unavailable(found),)


def for_spawn(fields: dict[str, Any], cli: str | None, asked: str | None,
              model_shell: tuple[str, ...] | None, settings: Any, backend: Any,
              network: bool = False) -> tuple[str, ...]:
    """Set a spawn record's `sandbox` (and `model_shell`: a shell a model
    chose, whose environment is a model's bash's, never the caller's keys);
    return the warnings. A model's shell is sandboxed as `asked` (a run's
    --sandbox), else as the user's config says (`model_shell_sandbox`,
    default auto: where this machine can)."""
    chosen = model_shell is not None and cli == "sh"
    fields["sandbox"], warnings = choose(
        settings.model_shell_sandbox if chosen and asked is None else asked, backend,
        network=network)
    if chosen:
        fields["model_shell"] = {"env": list(model_shell or ())}
    return warnings


def refused(fields: dict[str, Any], cli: str | None, mode: str, workspace: str,
            writable_roots: Any, worktree: bool) -> str | None:
    """Why spawn must make nothing of a subagent whose work runs under a
    write policy: its workspace or a writable root is (or holds) the home
    folder (`zapcli.approvals.home_refusal`; a tree is its work's own
    root), or its sandbox could not start (`linked`). None: neither."""
    from zapcli.approvals import home_refusal

    return (home_refusal(mode, "" if worktree else workspace, writable_roots)
            or linked(fields, cli, mode=mode, workspace=workspace, writable_roots=writable_roots,
                      worktree=worktree))


def linked(fields: dict[str, Any], cli: str | None, *, mode: str, workspace: str,
           writable_roots: Any, worktree: bool) -> str | None:
    """Why the sandbox of the subagent spawn is about to make could not
    start, known now — a control file that is a symbolic link in a folder
    it may write (`zapcli.host.sandbox.prepare` refuses it at the start) —
    with the ways out that fit it (`zapcli.sandbox.links.ways_out`); None
    when none is, or it is not sandboxed (`fields["sandbox"]` "off", `auto`
    where this machine has no sandbox). The folders are those `prepare`
    binds writable: the workspace and `writable_roots`, or what the
    definition's `sandbox.writable` names of them (`--cli sh`: `workspace`
    mode, whatever the approval). A `--worktree` spawn's tree is not made
    yet: its start checks it. Light (no policy built): spawn stays fast."""
    if fields.get("sandbox") not in ("auto", "on") or worktree:
        return None
    import os

    from zapcli.approvals import write_ceiling

    shell = cli == "sh"
    roots = tuple(writable_roots)
    ceiling, protect = write_ceiling("workspace" if shell else mode, workspace, roots)
    if not protect:
        return None
    from zapcli.paths import state_dir
    from zapcli.sandbox import probe as bwrap

    if not bwrap.cached(state_dir()).ok:
        return None
    declared = None if shell else ((fields.get("definition") or {}).get("sandbox") or {}).get(
        "writable")
    wanted = declared if isinstance(declared, list) else [workspace, *roots]
    limits = [os.path.realpath(c) for c in ceiling] if ceiling is not None else None
    real = [os.path.realpath(os.path.join(workspace, os.path.expanduser(w)))
            for w in wanted if isinstance(w, str) and w]
    real = [r for r in real if os.path.isdir(r) and (limits is None or any(
        r == c or r.startswith(c.rstrip("/") + "/") for c in limits))]
    from zapcli import control
    from zapcli.sandbox import links

    # the names no backend owns (a backend's or a plugin's own names would mean
    # scanning for plugins on spawn's hot path): the sandbox's start checks them all
    found = links.linked(real, control.names())
    if not found:
        return None
    link, target = found[0]
    return (f"{links.said(link, target)}. To run it, "
            f"{links.ways_out(link, full=not shell, worktree=True)}")
