"""A sandboxed `--worktree` tree's own object store: its agent adds objects
to the repository and never changes or removes one the repository had.

Imports `zapcli.worktrees.git`. The repository's shared `objects/` folder
holds the user's history too, and git never re-hashes a loose object when
it checks a file out: an agent that could write there could replace the
blob of a file on the user's branch, and the user's next `git checkout --
FILE` (reset, stash, clone) would write the agent's content unseen.

So the sandbox never sees the shared store writable (`zapcli.worktrees.fence`):
its `<common>/objects` is this tree's own folder, `<common>/zapcli-objects/
<branch>/`, and the shared store is bound read-only at `shared/` inside it,
which the own folder's `info/alternates` names (the `info/` folder itself is
read-only in the sandbox). Any git there — the built-in agent's, a shell's,
an agent CLI's, whatever its environment — reads every object and writes
new ones into the own folder; there is nothing to set or forget.

Outside, zapcli's git reads a tree's objects through the one runner, which
names the own folder as an alternate (`Place.objects`). Before anything of
the tree's enters the repository — when its run ends, before a merge or a
pick, before its tree goes — `bring_in` moves the own folder's objects into
the shared store through `git index-pack`, which hashes every object from its
content (an object stored under a name that is not its content's hash comes
in under its true name, and a name the repository already has is compared
byte for byte): never by copying files.
"""

from __future__ import annotations

import os

from zapcli import plain
from zapcli.worktrees import git as g

HOME = "zapcli-objects"  # in the common git dir: one object folder per fenced branch
SHARED = "shared"  # in an own folder: where the sandbox binds the shared store, read-only


def folder(common: str, branch: str) -> str:
    """Where the tree on `branch` keeps the objects its sandbox writes."""
    return os.path.join(os.path.realpath(common), HOME, branch.replace("/", "%"))


def existing(common: str, branch: str) -> str:
    """The own folder of the tree on `branch` when it has one (a real folder), else ''."""
    path = folder(common, branch)
    return path if os.path.isdir(path) and not os.path.islink(path) else ""


def prepare(common: str, branch: str) -> str:
    """Make (or check) the own folder of the tree on `branch`: `info/alternates`
    naming `shared`, and `shared` an empty folder to bind the store on.
    Returns its path."""
    path = folder(common, branch)
    for part in (os.path.join(common, HOME), path, os.path.join(path, "info"),
                 os.path.join(path, SHARED)):
        if os.path.islink(part):
            os.unlink(part)
        os.makedirs(part, exist_ok=True)
    alternates = os.path.join(path, "info", "alternates")
    if not os.path.isfile(alternates) or os.path.islink(alternates) or _text(alternates) != SHARED:
        if os.path.lexists(alternates):
            os.unlink(alternates)
        with open(alternates, "w", encoding="ascii") as fh:
            fh.write(SHARED + "\n")
    return path


def _text(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as fh:
        return fh.read(256).strip()


def _packs(path: str) -> list[str]:
    pack = os.path.join(path, "pack")
    try:
        return [os.path.join(pack, n) for n in os.listdir(pack)]
    except OSError:
        return []


def _holds(path: str) -> bool:
    """Whether the own folder holds any object file (loose or packed): no git
    process for the usual case, a folder brought in already."""
    try:
        with os.scandir(path) as entries:
            folders = [e.path for e in entries if e.name not in ("info", SHARED) and e.is_dir()]
        for sub in folders:
            with os.scandir(sub) as inside:
                if any(True for _ in inside):
                    return True
    except OSError:
        return True  # let git say what is wrong
    return False


def bring_in(r: g.Receipt) -> int:
    """Bring the objects the tree of `r` wrote in its sandbox into the shared
    store, verified (each hashed from its content by `git index-pack`), and
    drop them from its own folder. Returns how many came in (0: none, or no
    own folder). Raises GitError (git's message) when they cannot."""
    path = existing(r.common_dir, r.branch)
    if not path or not _holds(path):
        return 0
    co = plain.replace(r.checkout(), objects="")  # the shared store alone: no alternate
    own = {"GIT_OBJECT_DIRECTORY": path}
    packs = _packs(path)
    listed = g.git(["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], co,
                   env=own).stdout.split()
    if not listed:
        return 0
    import tempfile

    with tempfile.TemporaryDirectory(prefix="zapcli-objects-") as tmp:
        pack = os.path.join(tmp, "in.pack")
        g.git(["pack-objects", "--stdout", "-q"], co, env=own, input="\n".join(listed) + "\n",
              stdout_path=pack)
        g.git(["index-pack", "--stdin"], co, stdin_path=pack)
    for name in listed:
        _drop(os.path.join(path, name[:2], name[2:]))
    for file in packs:
        _drop(file)
    return len(listed)


def _drop(path: str) -> None:
    try:
        os.unlink(path)
    except (FileNotFoundError, IsADirectoryError):
        pass


def remove(common: str, branch: str) -> None:
    """Drop the own folder of the tree on `branch` (its tree is going; what it
    held was brought in first)."""
    import shutil

    path = existing(common, branch)
    if path:
        shutil.rmtree(path, ignore_errors=True)
