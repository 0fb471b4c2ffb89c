"""Which folder a `.git` makes a repository's checkout; imports only the
standard library (docs/explanation/security.md#git-runs-no-agents-code).

A `.git` FOLDER is the repository. A `.git` FILE (`gitdir: <dir>`) is a link
anything that writes in its folder could have written — a sandboxed agent
below the top of its workspace, naming any repository it can read, a project
of the user's elsewhere — so it is believed only when the git dir it names
names that folder back, as git makes them: a linked worktree's admin folder
(`git worktree add`), a submodule's git folder (`git submodule add`). Only
writing in that git dir makes it name another folder, which an agent cannot
do to a repository outside its workspace. Reads a few small files; no git.

A git dir's own entries are links of the same kind: `refs`, `objects`,
`index`, `logs`, ... made symbolic links into another repository's git dir
(a `sub/.git` FOLDER anything writing in `sub/` can make, or the common dir
a forged linked worktree's admin folder names) make git write that
repository's branches and index. `link_out` finds the first such link.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def git_dir_at(folder: Path) -> Path | None:
    """The git folder `folder/.git` is, or names, resolved; None when there is
    none, or what it is or names holds no `HEAD`.

    A `.git` FILE (`gitdir: <dir>`) is a link anything writing in `folder`
    could have written — a sandboxed agent below its workspace, naming any
    repository it can read. It counts only when the git dir it names links
    back to this very folder, as git makes them (`links_back`): a linked
    worktree's admin folder, a submodule's. A plain repository's git dir
    named from elsewhere is none. A symbolic link `.git` is such a link too:
    it counts when it leads to a folder inside `folder`, or links back.
    Reads a few small files, never through a FIFO."""
    dotgit = folder / ".git"
    if dotgit.is_dir() and not dotgit.is_symlink():
        return dotgit.resolve() if (dotgit / "HEAD").exists() else None
    named = gitfile_target(folder)
    if named is None:
        return None
    if dotgit.is_symlink() and Path(os.path.realpath(folder)) in named.parents:
        return named
    return None if links_back(named, folder) else named


NOT_WALKED = ("hooks",)  # git never writes there, zapcli's git runs no hook: a shared one is common
ENTRIES_ONLY = ("objects", "modules")  # their entries are checked, not what lies below
OBJECTS_WALKED = ("pack", "info")  # below `objects`: where git writes files by name


def link_out(git_dir: Path | str) -> tuple[str, str] | None:
    """(a symbolic link in the git dir `git_dir`, where it leads) for the first
    one that leads outside `git_dir`, else None. Git writes through such a
    link — a branch moved, an object or an index written in whatever git dir
    it leads to — and git itself makes none (a link that stays inside, as a
    symbolic-link HEAD or zapcli's fenced branch, is fine). Walks every entry
    but `hooks`, and below `refs`, `logs`, `worktrees` and the rest; of
    `objects` only its entries, `pack` and `info`. Never follows a link."""
    base = os.path.realpath(git_dir)

    def walk(folder: str, limit: tuple[str, ...] | None) -> tuple[str, str] | None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return None
        for entry in entries:
            if folder == base and entry.name in NOT_WALKED:
                continue
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                if target != base and not target.startswith(base + os.sep):
                    return entry.path, target
                continue
            if not entry.is_dir(follow_symlinks=False) or (limit is not None
                                                           and entry.name not in limit):
                continue
            below: tuple[str, ...] | None = None
            if folder == base and entry.name in ENTRIES_ONLY:
                below = OBJECTS_WALKED if entry.name == "objects" else ()
            elif limit is not None:
                below = ()
            found = walk(entry.path, below)
            if found:
                return found
        return None

    return walk(base, None)


def link_out_says(git_dir: str, found: tuple[str, str]) -> str:
    """What `link_out`'s find means and what to do, for a refusal."""
    link, target = found
    return (f"{link} is a symbolic link to {target}, outside the git dir {git_dir}: git would "
            "write through it (move branches, write objects or the index of whatever that "
            "is) when zapcli makes, merges or removes a tree. git makes no such link "
            "(git-new-workdir and some checkout tools do: make a linked tree with git "
            "worktree add instead); if you did not make it, something that wrote in this "
            "folder did (a subagent's work can make a repository below its workspace): look "
            f"at {git_dir}, and spawn from the repository's own checkout")


def gitfile_target(folder: Path) -> Path | None:
    """The git dir a `folder/.git` FILE names, or a symbolic link `.git`
    leads to (resolved), when it holds a `HEAD`; None for neither. Whether to
    believe it is `git_dir_at`'s (`links_back`)."""
    dotgit = folder / ".git"
    if dotgit.is_dir():  # a symbolic link to a folder
        named = Path(os.path.realpath(dotgit))
        return named if (named / "HEAD").exists() else None
    text = _small_text(dotgit, follow=True).split("\n")[0].strip()
    if not text.startswith("gitdir:") or not text[len("gitdir:"):].strip():
        return None
    named = Path(os.path.realpath(folder / text[len("gitdir:"):].strip()))
    return named if (named / "HEAD").exists() else None


def links_back(named: Path, folder: Path) -> str:
    """'' when the git dir `named` (what `folder/.git` names) names `folder`
    back, else why not. Either a linked worktree's admin folder
    `<common>/worktrees/<name>`, whose `gitdir` names `folder/.git` and whose
    `commondir` names `<common>`, a repository; or a submodule's git folder
    below an outer git dir's `modules/`, whose `core.worktree` names
    `folder`. Neither can be made to name a folder without writing in the git
    dir itself, which an agent writing in `folder` cannot do to a repository
    outside its workspace."""
    here = os.path.realpath(folder)
    if named.parent.name == "worktrees":
        common = named.parent.parent
        commondir = _small_text(named / "commondir").strip()
        gitdir = _small_text(named / "gitdir").strip()
        if not commondir or os.path.realpath(named / commondir) != str(common):
            return f"its commondir does not name {common}"
        if not all((common / d).is_dir() for d in ("objects", "refs")):
            return f"{common} is no repository"
        if not gitdir or os.path.realpath(named / gitdir) != os.path.join(here, ".git"):
            return f"its gitdir file names {gitdir or 'nothing'}, not {here}/.git"
        return ""
    if any(a.name == "modules" and (a.parent / "HEAD").exists() for a in named.parents):
        worktree = core_worktree(_small_text(named / "config", 64 * 1024))
        if worktree is not None and os.path.realpath(named / worktree) == here:
            return ""
        return f"its config's core.worktree names {worktree or 'nothing'}, not {here}"
    return ("it is a repository's own git dir, not a linked worktree's (in "
            "<repository>/worktrees/) nor a submodule's (in <repository>/modules/)")


def core_worktree(config: str) -> str | None:
    """`core.worktree` of a git config file's text as git writes it (the last
    one wins); None when it has none. Anything unusual reads as none."""
    section, found = "", None
    for line in config.splitlines():
        text = line.strip()
        if text.startswith("["):
            section = text[1:text.find("]")].strip().lower() if "]" in text else ""
        elif section == "core" and "=" in text:
            key, value = text.split("=", 1)
            if key.strip().lower() == "worktree":
                found = value.strip().strip('"') or None
    return found


def _small_text(path: Path, limit: int = 4096, *, follow: bool = False) -> str:
    """A small regular file's text ('' when missing, not a regular file, or
    unreadable), never through a FIFO; through a symbolic link only if `follow`."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)
