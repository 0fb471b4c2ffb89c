"""Memory (docs/explanation/rules.md#undeclared-means-unreachable): the bound directory, locked writes, prompt injection (tools: captools).
Imports zapcli.paths (lazily, for writes), `zapcli.beneath`, `zapcli.boundedread`
and the standard library. Folders it creates are 0700 and files 0600.

`private` → `<workspace>/.zapcli/agent-memory/<name>/`, `shared` →
`<workspace>/.zapcli/memory/`. File arguments are bare `*.md` names (no
separators, no `..`), so no argument can reach outside the directory. Root
`*.md` files are injected into the prompt within 4 KB each / 12 KB in all;
`daily/*.md` is searchable only. Writes hold a file lock in the directory, so
appends from several processes are serialized. Every file is opened from the
workspace's descriptor through no link (`zapcli.beneath`).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zapcli.beneath import makedirs_beneath, open_beneath
from zapcli.boundedread import regular

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

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
        return _kb(path.lstat().st_size)
    except OSError:
        return "the file"


def _base_of(root: Path) -> Path:
    """The workspace a memory folder lies in: the folder holding its `.zapcli`
    (else its own parent: the folder itself is never taken on trust)."""
    parts = root.parts
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == ".zapcli":
            return Path(*parts[:i])
    return root.parent


class MemoryStore:
    """One memory directory. Every file it touches is `root/<name>.md` or
    `root/daily/<name>.md` with `name` checked by `file_name`, opened from the
    workspace's descriptor through no link at all (`zapcli.beneath`): a
    `.zapcli/`, `agent-memory/` or file a repository ships (or an agent
    makes) as a link to elsewhere (~/.bashrc) is refused, never followed."""

    def __init__(self, root: Path, base: Path | None = None):
        self.root = root
        self.base = base if base is not None else _base_of(root)
        self.rel = os.path.relpath(root, self.base)

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
        """Where the file for `name` is shown to be (it is opened by `read`)."""
        return (self.root / "daily" / name) if daily else (self.root / name)

    def _refused(self, exc: OSError) -> ValueError:
        return ValueError(f"{self.rel} is (or goes through) a symbolic link or is no folder "
                          f"({exc.strerror}); memory files must be plain files inside a plain "
                          "folder of the workspace, so nothing was read or written")

    def _folder(self, daily: bool = False, *, create: bool = False) -> int:
        """A descriptor of the memory folder (or its daily/). Raises
        FileNotFoundError when it does not exist (and not `create`),
        ValueError when a link or a file is in the way."""
        rel = os.path.join(self.rel, "daily") if daily else self.rel
        if create and not self.base.exists():  # the workspace itself is trusted: made as it was
            from zapcli.paths import make_dirs

            make_dirs(self.base)
        base = os.open(self.base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if create:
                makedirs_beneath(base, rel, 0o700)  # 0700: memory holds what agents noted
            return open_beneath(base, rel, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
                raise self._refused(exc) from None
            raise
        finally:
            os.close(base)

    def read(self, name: str, daily: bool, limit: int) -> bytes:
        """At most `limit + 1` bytes of a memory file. Raises OSError (missing),
        ValueError (a link)."""
        folder = self._folder(daily)
        try:
            fd = open_beneath(folder, name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                raise self._refused(exc) from None
            raise
        finally:
            os.close(folder)
        with open(regular(fd, name), "rb") as fh:
            return fh.read(limit + 1)

    def _names(self, daily: bool) -> list[str]:
        """The `*.md` regular files of the folder (or daily/), sorted."""
        try:
            folder = self._folder(daily)
        except (OSError, ValueError):
            return []
        try:
            with os.scandir(folder) as entries:
                return sorted(e.name for e in entries
                              if e.name.endswith(".md") and e.is_file(follow_symlinks=False))
        finally:
            os.close(folder)

    def injection(self) -> tuple[list[tuple[str, str]], list[str]]:
        """Root *.md files for the prompt: ([(file name, text)], [one-line notes for
        files left out whole]). MEMORY.md first, then by name."""
        kept: list[tuple[str, str]] = []
        notes: list[str] = []
        total = 0
        for name in sorted(self._names(False), key=lambda n: (n != "MEMORY.md", n)):
            try:
                raw = self.read(name, False, FILE_BUDGET)
            except (OSError, ValueError):
                continue
            if len(raw) > FILE_BUDGET:
                notes.append(f"{name} left out: {_size(self.root / name)} is over the 4 KB "
                             "per-file budget; read it with memory_read")
            elif total + len(raw) > TOTAL_BUDGET:
                notes.append(f"{name} left out: the 12 KB memory budget is used up; "
                             "read it with memory_read")
            else:
                total += len(raw)
                kept.append((name, raw.decode("utf-8", "replace")))
        return kept, notes

    def write(self, name: str, text: str, *, daily: bool = False, replace: bool = False) -> Path:
        """Append (or replace) under the directory's lock; returns the file written."""
        from zapcli.paths import FILE_MODE

        data = (text if replace or text.endswith("\n") else text + "\n").encode("utf-8")
        root = self._folder(create=True)
        folder = self._folder(daily, create=True) if daily else os.dup(root)
        try:
            with _locked(root):
                if replace:
                    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
                    fd = open_beneath(folder, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                      | os.O_CLOEXEC, FILE_MODE)
                    try:
                        os.write(fd, data)
                        os.fsync(fd)
                        os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
                    except BaseException:
                        os.unlink(tmp, dir_fd=folder)
                        raise
                    finally:
                        os.close(fd)
                else:
                    fd = open_beneath(folder, name, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                                      | os.O_CLOEXEC, FILE_MODE)
                    try:
                        os.write(fd, data)
                    finally:
                        os.close(fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                raise self._refused(exc) from None
            raise
        finally:
            os.close(folder)
            os.close(root)
        return self.path(name, daily)

    def files(self) -> list[tuple[str, str]]:
        """(label, label) of every memory file: `name.md` and `daily/name.md`
        (what `search_files` takes, read back through `read_label`)."""
        return [(n, n) for n in self._names(False)] + \
            [(f"daily/{n}", f"daily/{n}") for n in self._names(True)]

    def read_label(self, label: str, limit: int) -> bytes:
        daily, name = label.startswith("daily/"), label.rsplit("/", 1)[-1]
        return self.read(name, daily, limit)


@contextmanager
def _locked(folder: int, timeout_s: float = 30.0) -> Iterator[None]:
    """The directory's lock (`.memory.lock`, flock: the same lock `filelock`
    takes), its file opened beneath the folder: appends from several
    processes are serialized. Raises OSError when it cannot be had in time."""
    import fcntl
    import time

    from zapcli.paths import FILE_MODE

    fd = open_beneath(folder, LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        end = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    raise OSError(errno.ETIMEDOUT, "the memory folder stayed locked by another "
                                  f"writer for {timeout_s:.0f}s; try again") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)


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
    kept, notes = MemoryStore(root, workspace).injection()
    for name, text in kept:
        lines.append(f"### {name}\n{text.rstrip()}")
    if notes:
        lines.append("\n".join(f"- {n}" for n in notes))
    if not kept and not notes:
        lines.append("(memory is empty)")
    return "\n\n".join(lines)
