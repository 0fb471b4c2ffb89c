"""The sandbox of one agent run or shell subagent, from its frozen facts:
`prepare` decides (on, off, or refused) and says why in diagnostics;
`open_sandbox` builds the long-lived one the tools use.

Imports `zapcli.sandbox`, `zapcli.definitions.model`, `zapcli.paths`,
`zapcli.worktrees` (a `--worktree` tree's git fenced before its sandbox).
`choice` is the spawn record's `sandbox`: "auto" (the built-in agent's
default: sandboxed where this machine can, and otherwise a diagnostic,
never a silent downgrade), "on" (asked for: refused where it cannot be),
"off" (`--no-sandbox`, and `--cli sh` unless `--sandbox`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli.definitions.model import SandboxSpec
from zapcli.sandbox import bwrap
from zapcli.sandbox.policy import GitAccess, Policy, resolve

CHOICES = ("auto", "on", "off")


@dataclass
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


def prepare(choice: str, *, mode: str, workspace: str, writable_roots: Iterable[str],
            spec: SandboxSpec | None, scratch: Path, tree: Any = None) -> Prepared:
    """The policy for `choice`, or why there is none. Creates `scratch` (0700).
    `tree`: the spawn record's worktree receipt: its git is fenced (what a
    commit on its own branch writes, no more) before the sandbox starts;
    refused when its git files no longer agree with the receipt."""
    if choice not in ("auto", "on"):
        return Prepared()
    found = probe()
    if not found.ok:
        if choice == "on":
            return Prepared(refused=f"the sandbox was asked for, but {found.missing}; {found.fix}")
        return Prepared(diagnostics=[_diag("unavailable", bwrap.unavailable(found))])
    from zapcli.paths import control_roots, make_dirs

    make_dirs(scratch)
    git, refused = _fenced(tree)
    if refused:
        return Prepared(refused=refused)
    policy, notes = resolve(mode, workspace=workspace, writable_roots=writable_roots,
                            network=bool(spec and spec.network),
                            writable=spec.writable if spec else None, scratch=str(scratch),
                            hidden=control_roots(), git=git)
    return Prepared(policy, found.program, [_diag("writable", n) for n in notes])


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
    return [GitAccess(fence.root, fence.writable, fence.readonly, fence.binds)], None


def open_sandbox(prepared: Prepared, on_start: Callable[[int], None] | None = None) -> Any:
    """The long-lived sandbox for a toolset (started on its first command), or None."""
    if prepared.policy is None:
        return None
    from zapcli.sandbox.session import Sandbox

    return Sandbox(prepared.policy, prepared.bwrap, on_start=on_start)

