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


def problems(roots: Iterable[str], names: Iterable[str]) -> list[str]:
    """One sentence per protected name under a writable root that is (or
    passes through) a symbolic link."""
    out = []
    listed = tuple(names)
    for root in roots:
        for name in listed:
            found = _linked(root, name)
            if found is None:
                continue
            link, target = found
            out.append(f"the sandbox cannot keep {link} read-only: it is a symbolic link (to "
                       f"{target}) in a writable folder, and a command could put a folder of its "
                       "own in its place. Replace the link with what it points to, or run with "
                       "--approval full (nothing is kept read-only) or --no-sandbox")
    return out
