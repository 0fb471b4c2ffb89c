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
that cannot be made all the same leaves the CLI as it was and says why.

A CLI whose script only launches a native program of its package (codex's
npm launcher spawns, or execs, `vendor/<triple>/bin/codex` of its platform
package, which then holds the stream and does the work) declares a
`Launcher`: the sandbox then runs that program itself, with the environment
the launcher gives it, from a copy in a folder of its own that mirrors what
the program finds beside it (`codex-resources/`, `codex-path/`, its
manifest: links to the originals). A launcher whose package is not laid out
so is run as any node script, and the sandbox says its child is within
reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import stat
import tempfile
import time

from zapcli.plain import field, frozen, plain

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


def copy(program: str, root: str | None = None, beside: tuple[str, ...] = ()) -> str:
    """The execute-only copy of `program` (a real path), made if needed:
    alone, or, given the folder `root` it lies in, at the same place in a
    folder of its own that holds links to what of `beside` (paths in
    `root`) there is. Raises OSError."""
    where = folder()
    st = os.stat(program)
    name = os.path.basename(program)
    key = f"{st.st_dev:x}-{st.st_ino:x}-{st.st_size:x}-{st.st_ctime_ns:x}"
    inner = os.path.relpath(program, root) if root else ""
    made = os.path.join(where, f"{name}-{key}")
    ready = os.path.join(made, inner) if inner else made
    try:
        if os.lstat(ready).st_mode & 0o777 == 0o111:
            return ready
    except OSError:
        pass
    temp = os.path.join(where, f".{name}.{os.getpid()}.tmp")
    try:
        if root:
            _mirror(program, root, inner, beside, temp)
            with contextlib.suppress(OSError):  # another runner's, made meanwhile: kept
                os.rename(temp, made)
            if os.lstat(ready).st_mode & 0o777 != 0o111:
                raise OSError(f"{made} holds no execute-only copy")
        else:
            shutil.copyfile(program, temp)
            os.chmod(temp, 0o111)
            os.replace(temp, made)
    finally:
        _remove(temp)
    stale = time.time() - KEEP_S  # the same program's other versions, once a day has passed: one
    for old in os.listdir(where):  # a runner just chose is never taken from under it
        path = os.path.join(where, old)
        if old.startswith(f"{name}-") and path != made:
            with contextlib.suppress(OSError):
                if os.lstat(path).st_mtime < stale:
                    _remove(path)
    return ready


def _mirror(program: str, root: str, inner: str, beside: tuple[str, ...], temp: str) -> None:
    """`temp` laid out as `root` for `program`: its execute-only copy at
    `inner`, links to the originals of `beside`."""
    os.mkdir(temp, 0o700)
    for rel, link in [(inner, False), *((b, True) for b in beside)]:
        source, target = os.path.join(root, rel), os.path.join(temp, rel)
        if link and not os.path.lexists(source):
            continue
        os.makedirs(os.path.dirname(target), 0o700, exist_ok=True)
        if link:
            os.symlink(source, target)
        else:
            shutil.copyfile(program, target)
            os.chmod(target, 0o111)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


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


@frozen
class Launcher:
    """A node script that only starts a native program of its npm package
    (a backend's declaration): `package`'s `script` spawns (or execs)
    `vendor/<triple>/<entry>` of the platform package for this machine — a
    package in a node_modules beside it, else its own `vendor/` — which
    finds `beside` there (run by its own path, the program is known by
    them too), with `env` set (`{package}`: the launcher's package folder,
    real) and `unset` dropped."""

    package: str  # "@openai/codex"
    script: str  # within it: "bin/codex.js"
    platforms: dict[str, tuple[str, str]]  # machine -> (platform package, target triple)
    entry: str  # within vendor/<triple>: "bin/codex"
    beside: tuple[str, ...]  # what it finds beside it (in vendor/<triple>): linked to its copy
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()

    def root(self, program: str) -> str | None:
        """The folder the native program at the real path `program` finds
        its files in: where it lies as `entry`, beside one of `beside`."""
        entry = os.sep + os.path.join(*self.entry.split("/"))
        root = program[:-len(entry)]
        if program.endswith(entry) and any(os.path.lexists(os.path.join(root, b))
                                           for b in self.beside):
            return root
        return None

    def native(self, script: str) -> tuple[str, str, dict[str, str | None]] | None:
        """For the launcher at the real path `script`: the program it starts,
        the folder that program finds its files in, the environment's
        changes; None when `script` is not this launcher or its program is
        not where the package lays it out."""
        inner = os.sep + os.path.join(*self.script.split("/"))
        own = script[:-len(inner)]
        if not (script.endswith(inner) and own.endswith(os.sep + os.path.join(
                *self.package.split("/")))):
            return None
        try:
            with open(os.path.join(own, "package.json"), encoding="utf-8") as fh:
                if json.load(fh).get("name") != self.package:
                    return None
        except (OSError, ValueError, AttributeError):
            return None
        found = self.platforms.get(platform.machine())
        if found is None:
            return None
        pkg, triple = found
        vendor = os.path.join(own, "vendor")
        at = os.path.dirname(script)
        while at != os.path.dirname(at):  # node's lookup from the script's folder up
            there = os.path.join(at, "node_modules", *pkg.split("/"))
            if os.path.basename(at) != "node_modules" and os.path.isfile(
                    os.path.join(there, "package.json")):
                vendor = os.path.join(there, "vendor")
                break
            at = os.path.dirname(at)
        root = os.path.realpath(os.path.join(vendor, triple))
        program = os.path.join(root, *self.entry.split("/"))
        if not os.path.isfile(program):
            return None
        env: dict[str, str | None] = dict.fromkeys(self.unset)
        env.update({k: v.replace("{package}", own) for k, v in self.env.items()})
        return program, root, env


@plain
class Unreachable:
    """How the sandbox starts a CLI out of its commands' reach: `argv`, the
    environment's changes (None: dropped), what it needs in view beside
    the copies' folder, and `why` not (None: it is)."""

    argv: list[str]
    env: dict[str, str | None] = field(default_factory=dict)
    sees: list[str] = field(default_factory=list)
    why: str | None = None
    copied: bool = False


def argv(argv: list[str], path: str | None, launcher: Launcher | None = None) -> Unreachable:
    """`argv` with the program it ends up running taken from an execute-only
    copy, and why not: an ELF is copied (in a folder mirroring the one it
    finds its files in, when it is `launcher`'s program, `vendor/<triple>/
    <entry>`); `launcher`'s script runs as its native program, copied so; a
    script whose `#!` names node (or a program on `path` named so) runs as
    `COPY-OF-NODE [its flags] SCRIPT ...`; anything else stays as it is."""
    first = shutil.which(argv[0], path=path) if os.sep not in argv[0] else argv[0]
    if not first:
        return Unreachable(argv, why=f"{argv[0]} was not found")
    real = os.path.realpath(first)
    try:
        with open(real, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        return Unreachable(argv, why=f"{real} cannot be read: {exc.strerror}")
    try:
        if magic == b"\x7fELF":
            root = launcher.root(real) if launcher else None
            beside = launcher.beside if launcher and root else ()
            return Unreachable([copy(real, root, beside), *argv[1:]],
                               sees=[root] if root else [], copied=True)
        native = launcher.native(real) if launcher else None
        if launcher and native:
            program, root, env = native
            try:
                return Unreachable([copy(program, root, launcher.beside), *argv[1:]], env,
                                   [root], copied=True)
            except OSError as exc:
                return Unreachable([program, *argv[1:]], env, [root],
                                   f"its execute-only copy could not be made ({exc})")
        words = _interpreter(real)
        if words and os.path.basename(words[0]).startswith("node"):
            node = words[0] if os.sep in words[0] else shutil.which(words[0], path=path)
            if node:
                done = Unreachable([copy(os.path.realpath(node)), *words[1:], real, *argv[1:]],
                                   copied=True)
                if launcher:  # its launcher, not as its package lays it out, or a wrapper
                    done.why = (f"{real} is not {launcher.package}'s launcher with its native "
                                "program where its package lays it out: the program it "
                                "starts stays within reach")
                return done
        return Unreachable(argv, why=f"{real} is neither a program nor a node script")
    except OSError as exc:
        return Unreachable(argv, why=f"its execute-only copy could not be made ({exc})")
