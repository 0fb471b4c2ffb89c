"""An agent CLI's private config home and what lives around it (docs/explanation/rules.md#agent-clis).

Imports `zapcli.trail.store` (paths), `zapcli.paths`. The
home is `<state>/subagents/<id>.home/` (0700): the adapter's launch files are
written there 0600, the CLI keeps its sessions there, and it stays after the
run so `zapcli continue` can resume the session; retention removes it with
its subagent. A continued subagent starts from a copy of the old one's home.
Also: the CLI's version (cached per program file, so `--version` runs once
per installed version), and the CLI's leftovers (processes that carry the
subagent's marker in their environment, however far they wandered).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zapcli.errors import ZapcliError
from zapcli.paths import ensure_dir, make_dirs, state_dir, write_private
from zapcli.trail import store

VERSION_TIMEOUT_S = 20.0


def home_of(sid: str) -> Path:
    return store.path_for(sid, store.HOME)


def _ignore(patterns: tuple[str, ...]) -> Any:
    """copytree's ignore: the adapter's patterns, sockets and FIFOs."""
    import fnmatch
    import stat

    def ignore(folder: str, names: list[str]) -> set[str]:
        out = {n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns)}
        for n in names:
            try:
                mode = os.lstat(os.path.join(folder, n)).st_mode
            except OSError:
                out.add(n)
                continue
            if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
                out.add(n)
        return out

    return ignore


def make_home(sid: str, copy_of: str | None = None, drop: tuple[str, ...] = ()) -> Path:
    """Create the home of `sid` (0700), empty or as a copy of `copy_of`'s home
    without the files matching `drop` (what the CLI must rebuild, e.g. an
    index holding the old home's absolute paths)."""
    home = home_of(sid)
    if copy_of is not None and home_of(copy_of).is_dir() and not home.exists():
        shutil.copytree(home_of(copy_of), home, symlinks=True, ignore=_ignore(drop))
    home.mkdir(mode=0o700, exist_ok=True)
    os.chmod(home, 0o700)
    return home


def write_files(home: Path, files: dict[str, str]) -> None:
    """The launch files, relative to `home`: folders 0700, files 0600, never
    through a symlink planted in the home."""
    root = home.resolve()
    for rel, text in files.items():
        path = (home / rel)
        if root not in path.resolve().parents:
            raise ValueError(f"launch file {rel!r} is outside the config home")
        make_dirs(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)


def _cache_path() -> Path:
    return ensure_dir(state_dir()) / "cli-versions.json"


def _key(command: list[str]) -> str | None:
    try:
        real = os.path.realpath(command[0])
        st = os.stat(real)
    except OSError:
        return None
    return f"{real}:{st.st_size}:{int(st.st_mtime)}:{' '.join(command[1:])}"


def cached_version(command: list[str]) -> str | None:
    key = _key(command)
    try:
        data = json.loads(_cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError, ZapcliError):  # no state folder: no cache
        return None
    value = data.get(key) if isinstance(data, dict) and key else None
    return value if isinstance(value, str) else None


def version(argv: list[str], command: list[str],
            env_for: Callable[[Path], dict[str, str]] | None = None) -> str | None:
    """The CLI's version: from the cache, else by running `argv` (its
    `--version`) once and caching the first line it prints. It runs in a
    throwaway folder, with the environment `env_for` gives for that folder
    (the backend's `probe_env`): even `--version` makes folders in a home
    (codex its helper links, opencode its XDG folders), never the user's (C24)."""
    import tempfile

    hit = cached_version(command)
    if hit is not None:
        return hit
    try:
        with tempfile.TemporaryDirectory(prefix="zapcli-version-") as scratch:
            env = env_for(Path(scratch)) if env_for is not None else None
            proc = subprocess.run(argv, capture_output=True, timeout=VERSION_TIMEOUT_S, env=env,
                                  stdin=subprocess.DEVNULL, cwd=scratch)
    except (OSError, subprocess.TimeoutExpired):
        proc = None
    text = (proc.stdout or proc.stderr).decode("utf-8", "replace").strip() if proc else ""
    found = text.splitlines()[0][:120] if proc and proc.returncode == 0 and text else None
    found = found or package_version(command[0])
    key = _key(command)
    if found and key:
        try:
            _remember(key, found)
        except (OSError, ZapcliError):  # a cache: a read-only or full state folder never stops anyone
            pass
    return found


def package_version(program: str) -> str | None:
    """The version an npm package's `package.json` gives for a CLI installed
    from it (`node_modules/.bin/gemini` -> `@google/gemini-cli`'s): where its
    `--version` could not run (a loaded machine, a first start that failed)."""
    try:
        folder = os.path.dirname(os.path.realpath(shutil.which(program) or program))
    except (OSError, ValueError):
        return None
    if "node_modules" not in folder.split(os.sep):  # an npm package's, never a project's
        return None
    for _ in range(6):  # from its script up to its package's folder
        try:
            with open(os.path.join(folder, "package.json"), encoding="utf-8") as f:
                data = json.loads(f.read(1 << 20))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("version"), str) and data.get("name"):
            return f"{data['version'][:40]} ({str(data['name'])[:80]})"
        parent = os.path.dirname(folder)
        if parent == folder or os.path.basename(folder) == "node_modules":
            return None
        folder = parent
    return None


def _remember(key: str, found: str) -> None:
    path = _cache_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data = data if isinstance(data, dict) else {}
    data[key] = found
    write_private(path, json.dumps(data).encode())  # atomic: a racing writer loses an entry at worst
