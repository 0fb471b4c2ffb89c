"""git inside the sandbox passes over the placeholder files
(`zapcli.sandbox.placeholders`): an empty folder is invisible to git, a file
is not, and an agent that commits with `git add -A` must not commit
`opencode.json` holding `{}`. Imports the standard library and this room.

Each repository whose held files these are (found as git finds it: the
nearest `.git` upward that is a repository) has its exclude file,
`<common dir>/info/exclude`, covered in this sandbox alone: a copy of it plus
one anchored line per held file, written in the sandbox's scratch folder
on the host (where the sandbox sees a tmpfs of its own instead) and bound
read-only over the original (`Policy.covers`). So `git status` lists none
of them and `git add -A` takes none, whatever environment a command gives
git, and the repository's own files stay byte for byte as they were.

Not an environment-level `core.excludesFile` (GIT_CONFIG_*): a command can
unset it, and it would replace the user's own global excludes, so their
ignored `.env` would be committed. A repository with no exclude file gets
no cover and a note (a mount needs a file to go on); git makes one at
`git init` and `git clone`. Outside the sandbox nothing changes: the user's
`git status` lists the held files as untracked while a run lasts.
"""

from __future__ import annotations

import errno
import os
import stat

from zapcli.sandbox.policy import Policy
from zapcli.sandbox.whole import git_common, in_view

HEADER = b"# zapcli: control files held read-only while a sandbox runs\n"


def repository(folder: str) -> tuple[str, str] | None:
    """(the top of the git worktree `folder` lies in, the exclude file git
    reads for it), or None outside any; an empty `.git` (a placeholder) is
    no repository, so git looks further up, and so does this."""
    while True:
        dotgit = os.path.join(folder, ".git")
        common = git_common(folder) if os.path.isfile(dotgit) else dotgit
        if common and os.path.isfile(os.path.join(common, "HEAD")):
            return folder, os.path.join(common, "info", "exclude")
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def pattern(rel: str) -> bytes:
    """An anchored gitignore line matching exactly `rel` (`/`-separated)."""
    escaped = "".join("\\" + c if c in "*?[]\\!# " else c for c in rel)
    return ("/" + escaped + "\n").encode("utf-8", "surrogateescape")


def _read(exclude: str) -> bytes | None:
    try:
        with open(exclude, "rb") as fh:
            return fh.read() if stat.S_ISREG(os.fstat(fh.fileno()).st_mode) else None
    except OSError:
        return None


def _write(folder: str, text: bytes) -> str:
    path = os.path.join(folder, f".git-exclude.{os.getpid()}.{os.urandom(6).hex()}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with open(fd, "wb") as fh:
            fh.write(text)
    except OSError:
        os.unlink(path)
        raise
    return path


def covers(policy: Policy, files: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """((a cover written in the scratch folder, the exclude file it goes
    over), ...) for the held `files`, and notes on what could not be
    covered. The caller binds them read-only and removes each cover once
    bwrap has ended."""
    found: dict[str, tuple[str, list[str]]] = {}
    for path in files:
        repo = repository(os.path.dirname(path))
        if repo is not None:
            found.setdefault(repo[1], (repo[0], []))[1].append(path)
    out: list[tuple[str, str]] = []
    notes: list[str] = []
    for exclude, (top, paths) in found.items():
        if not in_view(policy, exclude):
            continue
        original = _read(exclude)
        why = ""
        if original is None:
            why = f"the repository at {top} has no exclude file ({exclude}) to extend for the run"
        elif not policy.scratch or not os.path.isdir(policy.scratch):
            why = "the sandbox has no scratch folder to keep its exclude file in"
        else:
            text = original + (b"\n" if original and not original.endswith(b"\n") else b"")
            text += HEADER + b"".join(
                pattern(os.path.relpath(p, top).replace(os.sep, "/")) for p in paths)
            try:
                out.append((_write(policy.scratch, text), os.path.realpath(exclude)))
            except OSError as exc:
                why = f"its exclude file could not be written ({exc.strerror or errno.EIO})"
        if why:
            notes.append(f"git inside the sandbox lists {', '.join(paths)} as untracked: {why}")
    return out, notes
