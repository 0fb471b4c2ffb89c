"""An agent CLI out of reach of the commands it runs.

Imports only the standard library. A whole-program sandbox (an agent CLI's)
holds the CLI and every command it starts: one user, one pid namespace. A
process of that user may open another's `/proc/<pid>/fd/N`, take its
descriptors (`pidfd_getfd`), read or write its memory (`/proc/<pid>/mem`,
ptrace) — unless that process is not *dumpable*, a check no process in the
sandbox passes (they hold no capability). So a command could write into the
file the CLI's events and usage go to, or speak on its MCP sessions.

`execve` makes a process dumpable again, except when the caller cannot read
the program it runs: then the kernel keeps it non-dumpable. So the sandbox
runs the CLI from an execute-only copy (mode 0111) of its binary — the ELF
itself (claude's, opencode's), or node for a script CLI (`#!/usr/bin/env
node`): `argv`. The copies are kept per user in `/var/tmp/zapcli-<uid>/
exec-only/`, one per program version (its device, inode, size and change
time), made once and atomically, another version removed a day after it
was made. `/var/tmp` is every local user's: where another user holds that
name (made first, to turn the copies off), the copies go in a folder of the
user's own made there under a name no one could hold first
(`zapcli-<uid>-XXXXXXXX`, `mkdtemp`), found again by owner and mode. A copy
that cannot be made all the same leaves the CLI as it was and says why. A CLI
whose real work runs in a child it starts from a readable binary (codex's
launcher starts its native agent) keeps that child dumpable.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time

BASE = "/var/tmp"
KEEP_S = 86400.0  # another version of a program is removed once it is this old


def folder() -> str:
    """This user's folder of copies (made if missing). Raises OSError."""
    where = os.path.join(_top(), "exec-only")
    if not _own(where):
        raise OSError(f"{where} is not a folder of yours alone")
    return where


def _top() -> str:
    """`/var/tmp/zapcli-<uid>` when it is this user's own; else the first of
    this user's own `zapcli-<uid>-*` there, else one made now under a name
    no one could hold first. Raises OSError."""
    name = f"zapcli-{os.getuid()}"
    first = os.path.join(BASE, name)
    if _own(first):
        return first
    for other in sorted(os.listdir(BASE)):
        path = os.path.join(BASE, other)
        if other.startswith(f"{name}-") and _own(path, make=False):
            return path
    return tempfile.mkdtemp(prefix=f"{name}-", dir=BASE)  # mode 0700, a name of its own


def _own(path: str, make: bool = True) -> bool:
    """A folder of this user's, written by no one else (made if missing)."""
    try:
        if make:
            os.makedirs(path, 0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def copy(program: str) -> str:
    """The execute-only copy of `program` (a real path), made if needed.
    Raises OSError."""
    where = folder()
    st = os.stat(program)
    name = os.path.basename(program)
    key = f"{st.st_dev:x}-{st.st_ino:x}-{st.st_size:x}-{st.st_ctime_ns:x}"
    made = os.path.join(where, f"{name}-{key}")
    try:
        if os.lstat(made).st_mode & 0o777 == 0o111:
            return made
    except FileNotFoundError:
        pass
    temp = os.path.join(where, f".{name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(program, temp)
        os.chmod(temp, 0o111)
        os.replace(temp, made)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    stale = time.time() - KEEP_S  # the same program's other versions, once a day has passed: one
    for old in os.listdir(where):  # a runner just chose is never taken from under it
        path = os.path.join(where, old)
        if old.startswith(f"{name}-") and path != made:
            with contextlib.suppress(OSError):
                if os.lstat(path).st_mtime < stale:
                    os.unlink(path)
    return made


def _interpreter(script: str) -> list[str] | None:
    """A script's `#!` line as words (`env` dropped), None when it has none."""
    try:
        with open(script, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if w != "-S"]
    return words or None


def argv(argv: list[str], path: str | None) -> tuple[list[str], str | None]:
    """`argv` with the program it ends up running taken from an execute-only
    copy, and why not (None: it is): an ELF is copied; a script whose `#!`
    names node (or a program on `path` named so) runs as `COPY-OF-NODE
    [its flags] SCRIPT ...`; anything else stays as it is."""
    first = shutil.which(argv[0], path=path) if os.sep not in argv[0] else argv[0]
    if not first:
        return argv, f"{argv[0]} was not found"
    real = os.path.realpath(first)
    try:
        with open(real, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        return argv, f"{real} cannot be read: {exc.strerror}"
    try:
        if magic == b"\x7fELF":
            return [copy(real), *argv[1:]], None
        words = _interpreter(real)
        if words and os.path.basename(words[0]).startswith("node"):
            node = words[0] if os.sep in words[0] else shutil.which(words[0], path=path)
            if node:
                return [copy(os.path.realpath(node)), *words[1:], real, *argv[1:]], None
        return argv, f"{real} is neither a program nor a node script"
    except OSError as exc:
        return argv, f"its execute-only copy could not be made ({exc})"
