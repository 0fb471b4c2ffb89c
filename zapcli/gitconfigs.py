"""What git reads as a repository's configuration and what that runs, for
`zapcli.control` to hold read-only: `repository` (where git finds one from
a folder), `files` (every config file, included ones, the hooks folder, the
programs settings and hooks run and what those import or source:
`zapcli.gitruns`, `zapcli.gitscripts`), and `unholdable` (what a program
git runs finds by listing a folder that cannot be held: the sandbox
refuses to let work write there). Imports the standard library and kernel
modules (`zapcli.gitenv` asks git: `git config`, never a hook or a filter).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    # (the setting, its value, the config file it is in, `gitruns.Found`)
    Run = tuple[str, str, str, Any]

_GIT_FAILED = r"(?m)(?: in file |unable to access ')(.+?)(?:'| at line \d+)?:?$"


def repository(root: str) -> str | None:
    """The folder git finds a repository at from `root`, looking up as git
    does: the nearest of it and its parents with a `.git`, or that is a bare
    repository; None when there is none (and git is not asked)."""
    path = os.path.abspath(root)
    while True:
        if os.path.lexists(os.path.join(path, ".git")) or (
                os.path.isfile(os.path.join(path, "HEAD"))
                and os.path.isdir(os.path.join(path, "objects"))
                and os.path.isdir(os.path.join(path, "refs"))):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def files(top: str, runs: list[Run] | None = None,
          asked: dict[str, tuple[list[str], list[Run]]] | None = None) -> list[str]:
    """What git reads as configuration for the repository at `top`, as git
    itself says (`git config --list --show-origin`, run with the person's
    environment in the repository's top, to which git's names are relative:
    it reads the system's, the person's and the repository's files and
    every include, and runs nothing): each file that
    gave a setting; each file an `include.path` or `includeIf.*.path` names,
    there or not, whatever its condition — and what such a file says where
    git did not read it (its condition false now: `onbranch:release/**`
    holds once the person checks out a release branch); a file git could
    not read; and each folder a `core.hooksPath` names (relative: from the
    repository's top, where git runs hooks); and the program a setting that runs one names by a
    path, and what such a program imports or sources (`zapcli.gitruns`).
    Absolute paths; nothing where git is not there. `runs` gets (the
    setting, its value, the file it is in, `gitruns.Found`) of each setting
    whose program cannot be held whole or is held by its folder. `asked`:
    what earlier calls of one caller's single question found, by `top`
    (one sandbox's policy asks for its roots twice: git is run once)."""
    if asked is not None:
        hit = asked.get(top)
        if hit is None:
            found: list[Run] = []
            hit = asked[top] = (_files(top, found), found)
        if runs is not None:
            runs += hit[1]
        return list(hit[0])
    return _files(top, runs)


def _files(top: str, runs: list[Run] | None) -> list[str]:
    import re

    from zapcli.gitenv import config_origins

    answer = config_origins(top)
    if answer is None:
        return []  # no git here: nothing reads these files
    out = [os.path.join(top, found.group(1))
             for found in re.compile(_GIT_FAILED).finditer(os.fsdecode(answer[1]))]
    hooks: list[str] = []
    read: set[str] = set()
    included: list[str] = []
    read_alone = False
    while True:
        items = [os.fsdecode(b) for b in answer[0].split(b"\0")]
        for origin, entry in zip(items[0::2], items[1::2], strict=False):
            key, _, value = entry.partition("\n")
            key = key.lower()
            where = os.path.join(top, origin[len("file:"):]) if origin.startswith("file:") else ""
            out.append(where)
            read.add(os.path.normpath(where))
            if value and (key == "include.path" or key.startswith("includeif.") and key.endswith(".path")):
                target = os.path.expanduser(value)
                included.append(target if os.path.isabs(target) or not where
                                else os.path.join(os.path.dirname(where), target))
            elif key == "core.hookspath":  # the last one counts; a file unread, each
                hooks = [*hooks, value] if read_alone else [value]
            else:
                from zapcli import gitruns

                got = gitruns.found(key, value, top)
                out += got.paths
                if runs is not None and (got.listed or got.said):
                    runs.append((key, value, where, got))
        # a file included under a condition false now (`onbranch:release/**`) is read
        # as well: what it names runs once the condition holds
        unread = [f for f in included if os.path.normpath(f) not in read and os.path.isfile(f)]
        if not unread or len(read) > 64:
            break
        read.add(os.path.normpath(unread[0]))
        read_alone = True
        answer = config_origins(top, file=unread[0]) or (b"", b"")
    out += included
    folders = [os.path.join(top, os.path.expanduser(h)) for h in hooks if h]
    out += folders
    out += _hooks_read(top, folders or [_default_hooks(top)], runs)
    return [f for f in dict.fromkeys(out) if f]


def unholdable(roots: Iterable[str], runs: list[Run] | None = None
               ) -> list[tuple[str, str, str, str, str]]:
    """(the setting, its value, the config file it is in, what lists the
    folder, the folder) for each folder a program git runs lists that
    cannot be held, where it is, holds or lies in one of `roots` (real
    paths): the top of a repository a root is in, listed by a glob
    (`for f in */check.sh`: a folder made there runs at the person's next
    `git status`) or by a script there whose imports are not known
    (`zapcli.gitruns.Found.listed`). From `runs`, what `files` gathered
    for the repositories the roots are in (`zapcli.control.of_root` does);
    where None, git is asked here."""
    roots = [os.path.realpath(r) for r in roots]
    if runs is None:
        runs = []
        for top in dict.fromkeys(t for t in map(repository, roots) if t is not None):
            files(top, runs)
    out: list[tuple[str, str, str, str, str]] = []
    for key, value, where, got in runs:
        for word, folder, pattern in got.listed:
            real = os.path.realpath(folder)
            if any(_reaches(real, pattern, r) for r in roots):
                out.append((key, value, where, word, folder))
    return out


def _reaches(folder: str, pattern: str, root: str) -> bool:
    """Whether what is made in `root` can be matched from `folder`: the root
    is the folder or lies in it, and the glob `pattern` (its path from the
    folder; "": any depth) has more parts than the root lies deep, the
    first of them matching the root's way there (`*/check.sh` from the top
    reaches a root at the top, not one at `src/lib`; `*/*/check.sh` does)."""
    if os.path.commonpath([folder, root]) == root:
        return True  # the root holds the folder
    if os.path.commonpath([folder, root]) != folder:
        return False
    if not pattern:
        return True
    import fnmatch

    way = [p for p in os.path.relpath(root, folder).split("/") if p not in ("", ".")]
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    return len(parts) > len(way) and all(fnmatch.fnmatchcase(w, p)
                                         for w, p in zip(way, parts[:len(way)], strict=True))


HOOKS_READ = 64  # hooks read in one folder


def _default_hooks(top: str) -> str:
    """The hooks folder git uses for the repository at `top` where no
    `core.hooksPath` says: `hooks` in its common git dir ("" where none)."""
    from pathlib import Path

    from zapcli.gitlinks import git_dir_at

    git_dir = git_dir_at(Path(top))
    if git_dir is None:
        bare = os.path.isfile(os.path.join(top, "HEAD"))
        return os.path.join(top, "hooks") if bare else ""
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        common = ""
    return str((git_dir / common).resolve() if common else git_dir) + "/hooks"


def _hooks_read(top: str, folders: list[str], runs: list[Run] | None) -> list[str]:
    """What the hooks in `folders` run, import or source (the folders
    themselves are held: `files`, `.git`): `tools/lint.sh` a pre-commit
    hook runs, the module it imports (`zapcli.gitscripts`, from the top,
    where git runs a hook)."""
    from zapcli import gitscripts

    out: list[str] = []
    for folder in folders:
        try:
            names = sorted(n for n in os.listdir(folder) if not n.endswith(".sample"))
        except OSError:
            continue
        hooks = [p for p in (os.path.join(folder, n) for n in names[:HOOKS_READ])
                 if os.path.isfile(p)]
        got = gitscripts.reads(hooks, top, hint="sh")
        out += got.paths
        if runs is not None and (got.listed or got.said):
            runs.append(("a hook", ", ".join(os.path.basename(h) for h in hooks), folder, got))
    return out
