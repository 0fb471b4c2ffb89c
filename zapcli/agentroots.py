"""The folders agent work was given to write in: what tells a `trusted:`
folder's workspace the person made from one a subagent's work may have made
below such a folder (`zapcli.trust.decide`), and a repository of the
person's from one such work may have made (`repo_worked`). Imports only the standard
library and `zapcli.paths` (a spawn's hot path: no json, no re).

`note` runs as a subagent is created (its workspace — for a `--worktree`
one its tree, not the checkout it was spawned from —, the extra writable roots of
the config and of its definition's `sandbox.writable`), as its sandbox
starts (the folders bound writable), and as a `zapcli run` starts (its
workspace), before any of its work runs.
`<config>/trust/agent-roots` keeps each folder once, appended, as the hex
of its path's bytes on a line of its own — no byte of a path (a `\\r`, a
tab) can make or change another line. `worked_above` is the check: a
workspace below a noted folder is one work there could have made, whatever
its files' times say (a folder moved or linked into place keeps them);
`repo_worked` the same for a repository a new tree is made from, and
`written` for the files `.worktreeinclude` copied into it (either way its
`worktree.setup` then runs sandboxed, `zapcli.runner.tree`).
Where the config folder cannot be written (a read-only one, managed
elsewhere), the state folder's `agent-roots` takes the note; both are read.
Inside a subagent's work, where both are hidden, its spawner noted them. A
damaged line is passed over.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.paths import config_dir, state_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

NAME = "agent-roots"


def _files() -> tuple[Path, Path]:
    """Where notes go: the config folder's, else (read-only) the state folder's."""
    return config_dir() / "trust" / NAME, state_dir() / NAME


def roots() -> list[str]:
    """Each folder agent work was given to write in (resolved paths)."""
    raw = b""
    for file in _files():
        try:
            with open(file, "rb") as f:
                raw += f.read() + b"\n"
        except OSError:
            pass
    out: list[str] = []
    for line in raw.split(b"\n"):
        try:
            path = bytes.fromhex(line.decode("ascii")).decode("utf-8", "surrogateescape")
        except (UnicodeDecodeError, ValueError):
            continue
        if os.path.isabs(path) and path not in out:
            out.append(path)
    return out


def note(workspace: str, writable_roots: Iterable[str] = ()) -> None:
    """Note, before its work starts, the folders it is given to write in
    (relative writable roots are the workspace's, as the sandbox reads them)."""
    more = [os.path.expanduser(str(r)) for r in writable_roots if r]
    wanted = [os.path.realpath(p if os.path.isabs(p) else os.path.join(workspace, p))
              for p in (workspace, *more) if p]
    known = set(roots())
    new = [p for p in dict.fromkeys(wanted) if p not in known]
    if not new:
        return
    from zapcli.paths import make_dirs

    text = "".join(p.encode("utf-8", "surrogateescape").hex() + "\n" for p in new)
    for path in _files():
        try:
            make_dirs(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
            try:
                os.write(fd, text.encode("ascii"))
            finally:
                os.close(fd)
            return
        except OSError:
            continue


def note_spawn(fields: dict[str, Any]) -> None:
    """`note` for a spawn record's fields: its workspace, the config's
    `writable_roots` and its definition's `sandbox.writable`; and the real
    path each of those roots has now, kept in the record (`roots_real`) for
    its sandbox's start to hold them to (`zapcli.host.sandbox`: a folder on
    the way swapped for a link meanwhile binds another folder). A
    `--worktree` spawn's workspace is the checkout it was spawned from,
    where its work never runs: its tree is noted instead (and its relative
    roots are the tree's, as its sandbox reads them), so a noted checkout
    is one agent work was given itself (`written`)."""
    declared = ((fields.get("definition") or {}).get("sandbox") or {}).get("writable") or ()
    given = [str(r) for r in (*(fields.get("writable_roots") or ()), *declared) if r]
    tree = (fields.get("worktree") or {}).get("path")
    workspace = str(tree or fields["workspace"])
    fields["roots_real"] = {r: real_root(r, workspace) for r in given}
    note(workspace, given)


def real_root(root: str, workspace: str) -> str:
    """Where a writable root as written (`~`, relative to the workspace) leads now."""
    path = os.path.expanduser(root)
    return os.path.realpath(path if os.path.isabs(path) else os.path.join(workspace, path))


def worked_above(ws: Path) -> Path | None:
    """The nearest noted folder strictly above `ws`, or None."""
    above = [Path(path) for path in roots() if Path(path) in ws.parents]
    return max(above, key=lambda f: len(f.parts)) if above else None


def repo_worked(top: str, common_dir: str) -> Path | None:
    """The noted folder whose work could have made, or written the commits
    of, the repository at `top` (its common git dir `common_dir`), or None:
    its top lies below a noted folder (`sub/.git` of a workspace: only the
    top's `.git` is held), or its common git dir does, other than as a
    noted folder's own `.git` (held read-only to every sandboxed work there,
    `zapcli.control`). A repository whose top is a noted folder itself —
    the person's checkout an agent worked in — holds only the person's
    commits (its ignored files are another matter: `written`). Both paths
    are taken as they lead now (`realpath`)."""
    real_top = Path(os.path.realpath(top))
    found = worked_above(real_top)
    if found is not None:
        return found
    common = Path(os.path.realpath(common_dir))
    for path in roots():
        folder = Path(path)
        held = folder / ".git"
        if folder in common.parents and common != held and held not in common.parents:
            return folder
    return None


def written(files: Iterable[str]) -> tuple[str, Path] | None:
    """(a file, the noted folder it lies in) of `files` (absolute paths in a
    checkout), or None: one agent work given that folder could have
    written — the checkout's top itself, or a writable root within it. Each
    is taken where it lies (its folder as it leads now) and where it leads
    (a link's target)."""
    noted = [Path(path) for path in roots()]
    for path in files:
        for place in (Path(os.path.realpath(os.path.dirname(path)), os.path.basename(path)),
                      Path(os.path.realpath(path))):
            found = next((f for f in noted if f == place or f in place.parents), None)
            if found is not None:
                return path, found
    return None
