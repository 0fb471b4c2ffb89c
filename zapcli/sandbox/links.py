"""Protected names that are symbolic links, found before the sandbox starts.
Imports only the standard library.

The sandbox keeps a control file or folder (`.git`, `.zapcli`, ...) of a
writable root read-only by mounting over it. A mount cannot sit on a
symbolic link: bwrap follows the link (the target would be protected, the
link itself not), and the link lies in a writable folder, so a command
could delete it and put a folder of its own in its place — a `.git` with a
hook, a `.zapcli` with an MCP server. `problems` names each such link, so
the caller refuses with a sentence (what, why, what to do) instead of
running with the protection broken or letting bwrap abort with an error
of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def _linked(root: str, name: str) -> tuple[str, str] | None:
    """(the link, its target) when a component of `name` under `root` is a
    symbolic link; None when none is (or the path does not exist)."""
    path = root
    for part in name.split("/"):
        path = os.path.join(path, part)
        if os.path.islink(path):
            try:
                return path, os.readlink(path)
            except OSError:
                return path, "?"
        if not os.path.lexists(path):
            return None
    return None


def linked(roots: Iterable[str], names: Iterable[str]) -> list[tuple[str, str]]:
    """(the link, its target) for each protected name under a writable root
    that is (or passes through) a symbolic link."""
    out = []
    listed = tuple(names)
    for root in roots:
        for name in listed:
            found = _linked(root, name)
            if found is not None:
                out.append(found)
    return out


def said(link: str, target: str) -> str:
    """What is wrong with one link `linked` found, and why nothing runs."""
    return (f"the sandbox cannot keep {link} read-only: it is a symbolic link (to {target}) in "
            "a writable folder, and a command could put a folder of its own in its place")


def problems(roots: Iterable[str], names: Iterable[str]) -> list[str]:
    """`said` of each link `linked` finds."""
    return [said(link, target) for link, target in linked(roots, names)]


def ways_out(link: str, *, full: bool, worktree: bool, unsandboxed: bool = True) -> str:
    """What to do about a linked control file, only what would work: `full`,
    `--approval full` changes what its sandbox holds (not for `--cli sh`,
    whose commands run in `workspace` mode whatever the approval);
    `worktree`, a `--worktree` would move it off the link (it is not in a
    tree already: a tree has what git checks out, so a link git does not
    track is not there); `unsandboxed`, `--no-sandbox` is its to choose."""
    ways = [f"replace the link with a copy of what it points to (cp --remove-destination "
            f"\"$(readlink -f {link})\" {link})"]
    if worktree:
        ways.append("spawn with --worktree (a tree has only what git checks out: a link git "
                    "does not track is not in it)")
    if full:
        ways.append("spawn with --approval full (nothing is kept read-only)")
    if unsandboxed:
        ways.append("spawn with --no-sandbox (its commands run unsandboxed, as you)")
    return ways[0] if len(ways) == 1 else "; ".join(ways[:-1]) + "; or " + ways[-1]
