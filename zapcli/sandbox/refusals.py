"""What a refused write in the sandbox means, in one line a model (or a
person) can act on (C40). Imports only the standard library.

A tool's own error often names no path, or names it without saying that
the sandbox is why ("Read-only file system", npm's "Tracker idealTree
already exists"). `explain` reads a command's output for the paths the
sandbox refused — read-only ones, and the scratch folder full at its cap —
and says for each what is read-only, why, and the setting that allows it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from zapcli.sandbox.policy import Policy

READ_ONLY = ("Read-only file system", "EROFS", "read-only file system")
FULL = ("No space left on device", "ENOSPC")
MAX_NOTES = 3
# a path in an error message: quoted (' " ‘ ’ `) or bare, absolute or under ~
_PATH = re.compile(r"""[‘'"`]((?:/|~/)[^‘’'"`\n]*)[’'"`]|(?<![\w.~/])((?:/|~/)[^\s:'"`‘’,;)]+)""")
# folders under the home that a tool moves with a variable of its own
_MOVABLE = {".cargo": "CARGO_HOME", ".rustup": "RUSTUP_HOME", ".gradle": "GRADLE_USER_HOME",
            ".npm": "npm_config_cache", ".bun": "BUN_INSTALL", ".deno": "DENO_DIR",
            "go": "GOPATH", ".cache": "XDG_CACHE_HOME", ".config": "XDG_CONFIG_HOME",
            ".local/share": "XDG_DATA_HOME", ".local/state": "XDG_STATE_HOME"}


def _paths(line: str, home: str) -> list[str]:
    out = []
    for quoted, bare in _PATH.findall(line):
        path = (quoted or bare).rstrip(".")
        if path.startswith("~/") and home:
            path = os.path.join(home, path[2:])
        if path.startswith("/") and path != "/":
            out.append(os.path.normpath(path))
    return out


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"


def _read_only(path: str, home: str) -> str:
    """The line for one refused path."""
    where = "your home folder" if home and _under(path, [home]) else "it"
    note = (f"sandbox: {path} is read-only here ({where} is outside the folders commands may "
            "write: the workspace, writable_roots and $TMPDIR). To allow it, add the folder to "
            "writable_roots in config.yaml (or to the definition's sandbox.writable)")
    if home and _under(path, [home]):
        rel = os.path.relpath(path, home)
        for folder, var in _MOVABLE.items():
            if rel == folder or rel.startswith(folder + "/"):
                note += f"; or point {var} at a folder under $TMPDIR"
                break
    return note


def explain(output: str, policy: Policy, home: str = "") -> list[str]:
    """One line per path in `output` the sandbox refused (at most three),
    each naming the path and the setting that allows it; [] when the
    output shows no such refusal."""
    ro = any(w in output for w in READ_ONLY)
    full = any(w in output for w in FULL)
    if not (ro or full):
        return []
    opened = [*policy.writable]
    scratch = os.path.realpath(policy.scratch) if policy.scratch else ""
    notes: list[str] = []
    for line in output.splitlines():
        if ro and any(w in line for w in READ_ONLY):
            for path in _paths(line, home):
                if _under(path, policy.hidden):
                    continue  # zapcli's own folders: a zapcli inside says so itself
                if _under(path, policy.readonly):
                    note = (f"sandbox: {path} is kept read-only: it is configuration another "
                            "program runs, which only a person may change (--approval full "
                            "lifts this)")
                elif _under(path, opened):
                    continue  # writable: something else refused it
                else:
                    note = _read_only(path, home)
                if note not in notes:
                    notes.append(note)
        paths = _paths(line, home)
        if (full and scratch and any(w in line for w in FULL)
                and (not paths or _under(os.path.realpath(paths[0]), [scratch, "/dev/shm"]))):
            cap = _size(policy.scratch_size) if policy.scratch_size else "half the memory"
            note = (f"sandbox: the scratch folder ($TMPDIR, where package caches go) is full at "
                    f"its cap of {cap}; raise it with sandbox.scratch_size in the definition or "
                    "scratch_size in config.yaml, or write big files into the workspace")
            if note not in notes:
                notes.append(note)
    return notes[:MAX_NOTES]
