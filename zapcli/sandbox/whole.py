"""A whole program in the sandbox, not only the commands it runs (an agent
CLI, issue 27 item 10): `whole` widens the `Policy` that `resolve` made for
commands by what such a program needs and hides what it must not see.
Imports only the standard library and this room.

On top of the commands' policy: the program's private home writable; the
user's home folders hidden as zapcli's own are (an empty read-only folder in
their place); /tmp a writable folder of its own, empty (another program's
files and sockets there are not its business); and read-only again, inside what was hidden, only what the
program cannot run without (its interpreter, its package) and the folders it
works in that are not writable (a workspace under the home in a mode that
writes elsewhere). A home that is itself a writable root stays in view: a
folder cannot be both (`whole` says so in a note).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from zapcli.plain import replace
from zapcli.sandbox.policy import Policy


def under(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies in it (both absolute, as written)."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def in_view(policy: Policy, path: str) -> bool:
    """Whether `path` (real) is visible inside: not in a hidden folder, or in
    a writable, read-only or scratch folder bound inside that one."""
    real = os.path.realpath(path)
    covers = [*policy.hidden, *(["/tmp"] if policy.own_tmp else [])]
    cover = [h for h in covers if under(real, h)]
    if not cover:
        return True
    depth = max(len(h) for h in cover)
    bound = [*policy.writable, *policy.readonly, *([policy.scratch] if policy.scratch else [])]
    return any(under(real, b) and len(b) > depth for b in bound)


def install_root(program: str) -> str:
    """What a program needs to run, from its real path: the outermost
    `node_modules` it lies in (its package and their dependencies), else the
    file alone (a folder such as ~/bin or ~/.local may hold much more)."""
    real = os.path.realpath(program)
    parts = real.split(os.sep)
    if "node_modules" in parts:
        return os.sep.join(parts[:parts.index("node_modules") + 1]) or os.sep
    return real


def git_common(root: str) -> str | None:
    """The common folder (config, refs, objects) of the repository `root` is
    a linked worktree of (`.git` a file naming its folder there), which git
    in that tree reads; None for anything else."""
    try:
        with open(os.path.join(root, ".git"), encoding="utf-8") as fh:
            line = fh.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    admin = os.path.realpath(os.path.join(root, line[len("gitdir:"):].strip()))
    try:
        with open(os.path.join(admin, "commondir"), encoding="utf-8") as fh:
            common = fh.read(4096).strip() or "."
    except (OSError, UnicodeDecodeError):
        return None
    found = os.path.realpath(os.path.join(admin, common))
    return found if os.path.isdir(found) else None


def whole(policy: Policy, *, home: str, hide: Iterable[str] = (), show: Iterable[str] = (),
          ) -> tuple[Policy, list[str]]:
    """(the policy for a whole program, notes on what could not be hidden).

    `home`: its private home, made writable. `hide`: folders out of view (the
    user's home). `show`: folders (or files) it needs to read; each is bound
    read-only where it would otherwise be hidden."""
    home = os.path.realpath(home)
    writable = list(policy.writable)
    if home not in writable:
        writable.append(home)
    notes: list[str] = []
    hidden = list(policy.hidden)
    for raw in hide:
        real = os.path.realpath(raw) if raw else ""
        if not real or real == os.sep or not os.path.isdir(real) or real in hidden:
            continue
        if real in writable:
            notes.append(f"{raw} is a writable folder of this subagent, so it stays in view")
            continue
        hidden.append(real)
    out = replace(policy, writable=tuple(writable), hidden=tuple(hidden), own_tmp=True)
    readonly = list(out.readonly)
    for raw in show:
        real = os.path.realpath(raw)
        if not raw or not os.path.exists(real) or in_view(out, real):
            continue
        readonly.append(real)
        out = replace(out, readonly=tuple(readonly))
    return out, notes
