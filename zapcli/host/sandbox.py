"""The sandbox of one agent run or shell subagent, from its frozen facts:
`prepare` decides (on, off, or refused: a control file that is a link, a
folder git's settings list that cannot be held) and says why in diagnostics;
`open_sandbox` builds the long-lived one the tools use.

Imports `zapcli.sandbox`, `zapcli.definitions.model`, `zapcli.paths`,
`zapcli.control`, `zapcli.worktrees` (a `--worktree` tree's git fenced
before its sandbox). The caller that knows the backends passes the one list of
control files in (`zapcli.backends.registry.control_files`).
`choice` is the spawn record's `sandbox`: "auto" (the built-in agent's
default: sandboxed where this machine can, and otherwise a diagnostic,
never a silent downgrade), "on" (asked for: refused where it cannot be),
"off" (`--no-sandbox`, and `--cli sh` unless `--sandbox`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from zapcli.definitions.model import SandboxSpec
from zapcli.plain import field, plain, replace
from zapcli.sandbox import bwrap, links
from zapcli.sandbox.policy import GitAccess, Policy, resolve

TYPE_CHECKING = False  # `typing` costs a sandboxed runner ~3 ms: annotations only
if TYPE_CHECKING:
    from typing import Any

CHOICES = ("auto", "on", "off")


@plain
class Prepared:
    """`policy` None: commands run unsandboxed (`refused`: and must not run)."""

    policy: Policy | None = None
    bwrap: str = ""
    diagnostics: list[dict[str, str]] = field(default_factory=list)
    refused: str | None = None


def probe(fresh: bool = False) -> bwrap.Probe:
    """Can this machine sandbox commands (cached per boot in the state folder)?"""
    from zapcli.paths import state_dir

    return bwrap.cached(state_dir(), fresh=fresh)


def _diag(name: str, message: str) -> dict[str, str]:
    return {"dimension": "sandbox", "name": name, "message": message}


def records() -> str:
    """Where the control files' placeholders are recorded (`<state>/placeholders`)."""
    from zapcli.paths import placeholders_dir

    return str(placeholders_dir())


def full_mode_note(mode: str, control: Iterable[str]) -> list[dict[str, str]]:
    """`full` mode lifts the control files' protection: said, never silent."""
    if mode != "full":
        return []
    names = ", ".join(control)
    return [_diag("control_files", "full approval mode: commands and file tools may write the "
                  f"control files of the workspace ({names}), which other programs read as "
                  "configuration that runs commands; any other mode keeps them read-only")]


def prepare(choice: str, *, mode: str, workspace: str, writable_roots: Iterable[str],
            spec: SandboxSpec | None, scratch: Path, scratch_size: int | None = None,
            control: tuple[str, ...] | None = None, tree: Any = None,
            pinned: dict[str, str] | None = None,
            ways: dict[str, bool] | None = None, writes: bool = True) -> Prepared:
    """The policy for `choice`, or why there is none. Creates `scratch` (0700).
    `scratch_size`: the config's cap (the definition's wins; None: 1 GiB).
    `control`: the one list of control files (None: the names no backend owns).
    `tree`: the spawn record's worktree receipt: its git is fenced (what a
    commit on its own branch writes, no more) before the sandbox starts;
    refused when its git files no longer agree with the receipt. `pinned`:
    each writable root as written -> the real path spawn saw (`roots_real`);
    refused when one leads elsewhere now. `ways`: the ways out of a control
    file that is a link that fit its caller (`zapcli.sandbox.links.ways_out`'s
    keywords; None: `--approval full`, and `--worktree` unless in a tree).
    `writes` False: the work has no tool that writes or runs a command (a
    read-only definition): a git setting whose folder cannot be held is no
    reason to refuse it."""
    from zapcli import control as control_list

    names = control_list.names() if control is None else control
    said = full_mode_note(mode, names)
    if choice not in ("auto", "on"):
        return Prepared(diagnostics=said)
    found = probe()
    if not found.ok:
        if choice == "on":
            return Prepared(refused=f"the sandbox was asked for, but {found.missing}; {found.fix}")
        return Prepared(diagnostics=[_diag("unavailable", bwrap.unavailable(found)), *said])
    network = bool(spec and spec.network)
    diagnostics = []
    if not network and not found.network:  # the rest holds; never "sandboxed" with no word of it
        if choice == "on":
            return Prepared(refused=f"the sandbox was asked for with the network off, but "
                                    f"{found.network_missing}; {bwrap.NET_HINT}")
        diagnostics.append(_diag("network", bwrap.network_open(found)))
        network = True
    from zapcli.paths import control_roots, make_dirs, own_code, own_tree, trees_dir

    make_dirs(scratch)
    try:  # the trees folder exists before any work does: one it made would not be hidden
        make_dirs(trees_dir())
    except OSError:
        pass
    git, refused = _fenced(tree)
    if refused:
        return Prepared(refused=refused)
    runs: list[Any] = []
    policy, notes = resolve(mode, workspace=workspace, writable_roots=writable_roots,
                            network=network,
                            writable=spec.writable if spec else None, scratch=str(scratch),
                            hidden=control_roots(), shown=(own_tree(workspace) or "",),
                            control=names, git=git, code=own_code(), runs=runs)
    linked = _links(mode, workspace, writable_roots, policy, names)
    if linked:
        link, target = linked[0]
        fit = ways or {"full": True, "worktree": tree is None}
        return Prepared(refused=f"{links.said(link, target)}, so nothing ran. To run it, "
                                f"{links.ways_out(link, **fit)}")
    listed = _unholdable(mode, workspace, writable_roots, policy, git, runs) if writes else ""
    if listed:
        fit = ways or {"full": True}
        return Prepared(refused=f"{listed}, so nothing ran. To run it, "
                                f"{_listed_ways(full=fit.get('full', True))}")
    moved = _as_bound(mode, workspace, policy, pinned or {})
    if moved:
        return Prepared(refused=moved)
    given = [s for s in (spec.scratch_size if spec else None, scratch_size) if s is not None]
    size = given[0] if given else policy.scratch_size
    if size and not found.size:
        from zapcli.sizes import show

        diagnostics.append(_diag("scratch_size", f"the scratch folder is not capped at "
                                 f"{show(size)}: {found.program} is older than bubblewrap 0.6 "
                                 "(no tmpfs size), so the kernel's default holds: half the memory"))
        size = 0
    policy = replace(policy, scratch_size=size, sockets=_sockets(spec))
    return Prepared(policy, found.program,
                    [*diagnostics, *(_diag("writable", n) for n in notes), *said])


def _links(mode: str, workspace: str, writable_roots: Iterable[str], policy: Policy,
           names: Iterable[str]) -> list[tuple[str, str]]:
    """(link, target) of protected names that are symbolic links in a
    writable root: the sandbox cannot keep them read-only (`zapcli.sandbox.links`)."""
    from zapcli.approvals import write_ceiling

    _ceiling, protect = write_ceiling(mode, workspace, tuple(writable_roots))
    return links.linked(policy.writable, names) if protect else []


def _unholdable(mode: str, workspace: str, writable_roots: Iterable[str], policy: Policy,
                git: list[GitAccess], runs: list[Any]) -> str:
    """What cannot be kept read-only of what the person's git runs, in a
    writable root (`zapcli.gitconfigs.unholdable`: a folder a program git runs
    lists, the top of a repository; from `runs`, which `resolve` gathered)
    — said; "" where nothing is."""
    from zapcli.approvals import write_ceiling
    from zapcli.gitconfigs import unholdable

    _ceiling, protect = write_ceiling(mode, workspace, tuple(writable_roots))
    given = {w for g in git for w in g.writable}
    roots = [w for w in policy.writable if w not in given]
    found = unholdable(roots, runs) if protect and roots else []
    if not found:
        return ""
    key, value, where, what, folder = found[0]
    return (f"the sandbox cannot keep what your git runs out of its commands' reach: {key} "
            f"(in {where or 'git config'}) runs {value!r}, and {what} {folder}, where commands "
            "may write: a file or folder they made there would run at your next git command, "
            "as you")


def _listed_ways(*, full: bool) -> str:
    """What to do about a setting `_unholdable` found, only what would work."""
    ways = ["change the setting so that what it runs, and what that reads, lies in a folder "
            "below the top (tools/*/check.sh, tools/fsmon.py: that folder is then kept read-only)",
            "give the work a definition whose sandbox.writable leaves that folder out (names "
            "only folders below it that the pattern does not reach), or one whose tools neither "
            "write nor run commands (read, glob, grep)"]
    if full:
        ways.append("spawn with --approval full (nothing is kept read-only)")
    ways.append("spawn with --no-sandbox (its commands run unsandboxed, as you)")
    return "; or ".join(ways)


def _as_bound(mode: str, workspace: str, policy: Policy, pinned: dict[str, str]) -> str | None:
    """What spawn checked, checked again against the folders the sandbox is
    about to bind: between a spawn and its start (queued, `--after` another)
    earlier work may have replaced its workspace, or a folder on the way to
    a relative writable root, with a link — to the home folder, to another
    project. The workspace (real when spawned) must still be itself; no
    bound folder may be or hold the home folder; the bound folders are
    noted as given to agent work (`zapcli.agentroots`). None: all holds."""
    real = os.path.realpath(workspace)
    if real != os.path.normpath(workspace):
        return (f"the workspace {workspace} now leads to {real}: a folder on its path was "
                "replaced by a link since the spawn (by earlier work?), so nothing ran; look at "
                "the folder, and spawn again from the one you mean")
    from zapcli import agentroots
    from zapcli.approvals import home_refusal
    from zapcli.paths import state_dir

    for given, seen in pinned.items():
        now = agentroots.real_root(given, workspace)
        if now != seen:
            return (f"the writable root {given} now leads to {now}, not {seen} as at the spawn: "
                    "a folder on its way was replaced by a link since (by earlier work?), so "
                    "nothing ran; look at it, and spawn again")
    why = home_refusal(mode, "", policy.writable)
    if why:
        return f"{why}. Nothing ran"
    own = os.path.realpath(state_dir())
    agentroots.note(real, [w for w in policy.writable if not (w + "/").startswith(own + "/")])
    return None


def _sockets(spec: SandboxSpec | None) -> tuple[str, ...]:
    return tuple(os.path.expanduser(p) for p in (spec.sockets if spec else ()))


def _fenced(tree: Any) -> tuple[list[GitAccess], str | None]:
    """(what the sandbox grants of a `--worktree` tree's git, or why it cannot start)."""
    from zapcli.worktrees.git import GitError, Receipt

    r = Receipt.from_dict(tree)
    if r is None:
        return [], None
    from zapcli.worktrees.fence import arm

    try:
        fence = arm(r)
    except (GitError, OSError) as exc:
        return [], f"worktree: its git cannot be fenced for the sandbox: {getattr(exc, 'message', exc)}"
    return [GitAccess(fence.root, fence.writable, fence.readonly, fence.binds, fence.covers)], None


def open_sandbox(prepared: Prepared, on_start: Callable[[int], None] | None = None) -> Any:
    """The long-lived sandbox for a toolset (started on its first command), or None."""
    if prepared.policy is None:
        return None
    from zapcli.sandbox.session import Sandbox

    return Sandbox(prepared.policy, prepared.bwrap, on_start=on_start, records=records())

