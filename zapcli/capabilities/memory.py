"""Memory (SPEC §8.4): the bound directory, locked writes, prompt injection (tools: captools).
Imports zapcli.locks and zapcli.paths (lazily, for writes), `zapcli.boundedread`
and the standard library. Folders it creates are 0700 and files 0600.

`private` → `<workspace>/.zapcli/agent-memory/<name>/`, `shared` →
`<workspace>/.zapcli/memory/`. File arguments are bare `*.md` names (no
separators, no `..`), so no argument can reach outside the directory. Root
`*.md` files are injected into the prompt within 4 KB each / 12 KB in all;
`daily/*.md` is searchable only. Writes hold a file lock in the directory, so
appends from several processes are serialized.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from zapcli.boundedread import read_at_most

FILE_BUDGET = 4 * 1024
TOTAL_BUDGET = 12 * 1024
MAX_READ = 64 * 1024
MAX_WRITE = 64 * 1024
LOCK_NAME = ".memory.lock"
_FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\.md$")


def memory_dir(workspace: Path, mode: str, name: str) -> Path | None:
    """Where a definition's memory lives; None for `none`. `name` may be `plugin:x`."""
    if mode == "private":
        return workspace / ".zapcli" / "agent-memory" / name.replace(":", "_")
    if mode == "shared":
        return workspace / ".zapcli" / "memory"
    return None


def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB"


def _size(path: Path) -> str:
    try:
        return _kb(path.stat().st_size)
    except OSError:
        return "the file"


class MemoryStore:
    """One memory directory. Every path it touches is `root/<name>.md` or
    `root/daily/<name>.md` with `name` checked by `file_name`."""

    def __init__(self, root: Path):
        self.root = root

    @staticmethod
    def file_name(value: Any) -> str:
        """A safe bare file name (`notes` → `notes.md`). Raises ValueError otherwise."""
        if not isinstance(value, str) or not value.strip():
            raise ValueError("`file` must be a file name like notes.md")
        name = value.strip()
        if "/" in name or "\\" in name or ".." in name or "\0" in name:
            raise ValueError(f"{value!r}: memory file names cannot contain path separators or '..'")
        name = name if name.endswith(".md") else name + ".md"
        if not _FILE_RE.match(name):
            raise ValueError(f"{value!r} is not a valid memory file name (letters, digits, -_.)")
        return name

    def path(self, name: str, daily: bool = False) -> Path:
        """The file for `name`. Raises ValueError when it (or its folder) is a
        symlink: a repository could ship one pointing anywhere (~/.bashrc)."""
        path = (self.root / "daily" / name) if daily else (self.root / name)
        if not self.contained(path):
            raise ValueError(f"{name} is a symbolic link or leaves the memory folder; memory "
                             "files must be plain files inside it")
        return path

    def contained(self, path: Path) -> bool:
        """True when `path` is no symlink and sits in the memory folder (or its daily/)."""
        try:
            if self.root.is_symlink() or path.is_symlink() or (path.parent != self.root and path.parent.is_symlink()):
                return False
            root = self.root.resolve()
            return path.resolve().parent in (root, root / "daily")
        except OSError:
            return False

    def injection(self) -> tuple[list[tuple[str, str]], list[str]]:
        """Root *.md files for the prompt: ([(file name, text)], [one-line notes for
        files left out whole]). MEMORY.md first, then by name."""
        try:
            files = sorted((p for p in self.root.glob("*.md") if p.is_file() and self.contained(p)),
                           key=lambda p: (p.name != "MEMORY.md", p.name))
        except OSError:
            return [], []
        kept: list[tuple[str, str]] = []
        notes: list[str] = []
        total = 0
        for path in files:
            try:
                raw = read_at_most(path, FILE_BUDGET)
            except OSError:
                continue
            if len(raw) > FILE_BUDGET:
                notes.append(f"{path.name} left out: {_size(path)} is over the 4 KB per-file "
                             "budget; read it with memory_read")
            elif total + len(raw) > TOTAL_BUDGET:
                notes.append(f"{path.name} left out: the 12 KB memory budget is used up; "
                             "read it with memory_read")
            else:
                total += len(raw)
                kept.append((path.name, raw.decode("utf-8", "replace")))
        return kept, notes

    def write(self, name: str, text: str, *, daily: bool = False, replace: bool = False) -> Path:
        """Append (or replace) under the directory's lock (`zapcli.locks`, as
        every lock zapcli takes: flock on a 0600 file opened without following
        a link); returns the file written. Raises OSError (TimeoutError when
        another writer holds the lock for 30 s)."""
        from zapcli.locks import LockTimeout, exclusive
        from zapcli.paths import FILE_MODE, make_dirs, write_private

        target = self.path(name, daily)
        make_dirs(target.parent)  # 0700: memory holds what agents noted (SPEC §2)
        try:
            with exclusive(self.root / LOCK_NAME, 30):
                self._put(target, text, replace, write_private, FILE_MODE)
        except LockTimeout:
            raise TimeoutError(f"another writer held the memory folder's lock "
                               f"({self.root / LOCK_NAME}) for 30 s; try again") from None
        return target

    @staticmethod
    def _put(target: Path, text: str, replace: bool, write_private: Any, mode: int) -> None:
        if replace:
            write_private(target, text.encode("utf-8"))
            return
        data = text if text.endswith("\n") else text + "\n"
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, mode)
        try:
            os.write(fd, data.encode("utf-8"))
        finally:
            os.close(fd)

    def files(self) -> list[tuple[str, Path]]:
        out = []
        for pattern in ("*.md", "daily/*.md"):
            out += [(str(p.relative_to(self.root)), p) for p in sorted(self.root.glob(pattern))
                    if p.is_file() and self.contained(p)]
        return out


def prompt_section(root: Path, mode: str, workspace: Path) -> str:
    """The memory part of the capability catalog (heading, injected files, notes)."""
    try:
        shown = str(root.resolve().relative_to(workspace.resolve())) + "/"
    except ValueError:
        shown = str(root) + "/"
    who = "private to this definition" if mode == "private" else "shared by this workspace's subagents"
    lines = [f"## Memory\nYour memory persists between runs in {shown} ({who}). Save what a "
             "later run would need with memory_write; look things up with memory_read and "
             "memory_search."]
    kept, notes = MemoryStore(root).injection()
    for name, text in kept:
        lines.append(f"### {name}\n{text.rstrip()}")
    if notes:
        lines.append("\n".join(f"- {n}" for n in notes))
    if not kept and not notes:
        lines.append("(memory is empty)")
    return "\n\n".join(lines)
