"""`.worktreeinclude`: ignored files of the checkout (`.env`, local config)
copied into a subagent's new tree, which git's checkout leaves without them.

Imports `zapcli.worktrees.git`. The file sits at the checkout's top and is
read with gitignore syntax; a file is copied when it matches it AND git
ignores it (tracked files are in the tree already; git itself does the
matching: `ls-files --ignored --exclude-from`, then `check-ignore`). A file
already in the tree is never overwritten; a symbolic link is copied as the
link; nothing is written outside the tree.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from zapcli.worktrees import git as g

FILE = ".worktreeinclude"


def wanted(where: g.Place) -> list[str]:
    """The checkout's files (relative paths) to copy; [] without the file."""
    spec = Path(where.work_tree) / FILE
    if not spec.is_file():
        return []
    listed = g.git(["ls-files", "-z", "--others", "--ignored", f"--exclude-from={spec}"],
                   where).stdout
    candidates = [p for p in listed.split("\0") if p]
    if not candidates:
        return []
    proc = g.git(["check-ignore", "-z", "--stdin"], where, check=False,
                 input="\0".join(candidates) + "\0")
    if proc.returncode not in (0, 1):
        raise g.GitError(g._message(proc), proc.returncode)
    return sorted(p for p in proc.stdout.split("\0") if p)


def copy(where: g.Place, tree: str) -> list[str]:
    """Copy what `.worktreeinclude` names from the checkout `where` into the new
    tree; the paths copied. Raises GitError (git could not list them) or
    OSError (a copy failed)."""
    repo = where.work_tree
    root = os.path.realpath(tree)

    def inside(path: str) -> bool:
        real = os.path.realpath(path)  # the existing part resolved: a link out of the tree shows
        return real == root or real.startswith(root + os.sep)

    done = []
    for rel in wanted(where):
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or (parts and parts[0] == ".git"):
            continue
        target = os.path.join(tree, rel)
        folder = os.path.dirname(target)
        if os.path.lexists(target) or not inside(folder):
            continue
        os.makedirs(folder, exist_ok=True)
        if inside(folder):
            shutil.copy2(os.path.join(repo, rel), target, follow_symlinks=False)
            done.append(rel)
    return done
