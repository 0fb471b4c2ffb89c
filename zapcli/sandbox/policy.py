"""What one sandbox may write and reach (SPEC §18): `Policy`, and `resolve`,
which turns an approval mode, the workspace, `writable_roots` and a
definition's `sandbox: {network, writable}` into it.

Imports `zapcli.approvals` (the one place that says what a mode lets run).
A definition chooses inside what its approval mode allows, never past it:
a `writable` path outside the mode's ceiling is left read-only with a note.
zapcli's own state and config folders are hidden (an empty read-only folder
in their place: trails, approvals and the MCP server's token are not the
agent's), all but the subagent's scratch folder. A `--worktree` tree's git
(its admin folder, the shared objects, its own branch) comes in from the
caller as `GitAccess`, worked out where git's layout is known
(`zapcli.worktrees.fence`); nothing of a repository is made writable here
from what a tree's own files say.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zapcli.approvals import write_ceiling

PROTECTED = (".git", ".zapcli")


@dataclass(frozen=True)
class Policy:
    """Real paths. `writable` and `scratch` are bound read-write over a
    read-only `/`; `readonly` (`.git/`, `.zapcli/` of a writable root, a
    tree's git link files) stay read-only inside them; `hidden` become empty
    and read-only; `binds` are (source, target): the source folder bound
    read-write in the target's place (a tree's own branch folder)."""

    network: bool = False
    writable: tuple[str, ...] = ()
    readonly: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    scratch: str = ""
    binds: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"network": self.network, "writable": list(self.writable),
                "readonly": list(self.readonly), "hidden": list(self.hidden),
                "scratch": self.scratch, "binds": [list(b) for b in self.binds]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        def paths(key: str) -> tuple[str, ...]:
            return tuple(str(p) for p in data.get(key) or ())

        return cls(network=bool(data.get("network")), writable=paths("writable"),
                   readonly=paths("readonly"), hidden=paths("hidden"),
                   scratch=str(data.get("scratch") or ""),
                   binds=tuple((str(b[0]), str(b[1])) for b in data.get("binds") or ()
                               if isinstance(b, list | tuple) and len(b) == 2))

    def describe(self) -> str:
        """One line for a person (the trail's start diagnostic, doctor)."""
        rw = ", ".join(self.writable) or "nothing"
        return (f"network {'on' if self.network else 'off'}; writable: {rw} and the scratch "
                f"folder {self.scratch}")


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _expand(path: str, workspace: str) -> str:
    path = os.path.expanduser(path)
    return os.path.realpath(path if os.path.isabs(path) else os.path.join(workspace, path))


def _in_protected(path: str, roots: list[str]) -> bool:
    """Whether `path` is in a `.git/` or `.zapcli/` below the root it lies in
    (a root's own name does not count: a workspace may live anywhere)."""
    base = next((r for r in roots if _under(path, r)), None)
    rel = os.path.relpath(path, base) if base else path
    return any(part in PROTECTED for part in rel.split(os.sep))


@dataclass(frozen=True)
class GitAccess:
    """What a commit on its own branch writes of the git of the tree at `root`
    (a `--worktree` subagent's): `writable` folders and files (its admin
    folder, the shared objects, its branch's reflog), `readonly` files inside
    them (the admin folder's `commondir`, `gitdir`, `config.worktree`), and
    `binds` (its branch's own folder in place of the folder of every
    branch). Granted only with that root: a root left read-only gets none."""

    root: str
    writable: tuple[str, ...] = ()
    readonly: tuple[str, ...] = ()
    binds: tuple[tuple[str, str], ...] = ()


def linked_git(root: str, access: Iterable[GitAccess]) -> GitAccess | None:
    """The git access given for the writable root `root`, if any."""
    return next((a for a in access if os.path.realpath(a.root) == root), None)


def resolve(mode: str, *, workspace: str, writable_roots: Iterable[str] = (),
            network: bool = False, writable: Iterable[str] | None = None, scratch: str,
            hidden: Iterable[str] = (), git: Iterable[GitAccess] = ()) -> tuple[Policy, list[str]]:
    """(the policy, one note per declared path that was left out and why).

    `writable` None (not declared) means the workspace and `writable_roots`;
    relative paths are taken from the workspace; `git`: what a `--worktree`
    tree's commits need, for the root it names. Raises ValueError for an
    unknown mode."""
    roots = tuple(writable_roots)
    ceiling, protect = write_ceiling(mode, workspace, roots)
    limits = [os.path.realpath(c) for c in ceiling] if ceiling is not None else None
    shut = [os.path.realpath(h) for h in hidden if h and os.path.isdir(h)]
    wanted = [workspace, *roots] if writable is None else list(writable)
    notes: list[str] = []
    out: list[str] = []
    for raw in wanted:
        real = _expand(raw, workspace)
        why = None
        if not os.path.exists(real):
            why = "it does not exist"
        elif limits is not None and not any(_under(real, c) for c in limits):
            why = f"{mode} mode lets commands write only in the workspace and writable_roots"
        elif protect and _in_protected(real, limits or [os.path.realpath(workspace)]):
            why = f"it is inside {'/'.join(PROTECTED)}/, which only a person may change"
        elif any(_under(real, h) for h in shut):
            why = "it is inside zapcli's own folders, which only a person may change"
        if why:
            notes.append(f"sandbox.writable {raw}: {why}; it stays read-only")
        elif real not in out:
            out.append(real)
    access = list(git)
    links: list[str] = []
    binds: list[tuple[str, str]] = []
    for root in list(out):
        given = linked_git(root, access)
        if given is not None:
            out += [g for g in given.writable if g not in out]
            links += given.readonly
            binds += given.binds
    readonly = [os.path.join(root, name) for root in out for name in PROTECTED
                if protect and os.path.exists(os.path.join(root, name))
                and not os.path.islink(os.path.join(root, name))]
    return Policy(network=network, writable=tuple(out), readonly=tuple(readonly + links),
                  hidden=tuple(dict.fromkeys(shut)), scratch=scratch,
                  binds=tuple(binds)), notes
