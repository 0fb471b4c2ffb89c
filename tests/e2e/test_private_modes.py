"""Writes into the config home, the workspace's `.zapcli/` and the state
folder are private whatever the umask (#12.9, docs/explanation/rules.md#where-things-live): folders zapcli
creates are 0700, files 0600 — definitions (`agents save`, `agents copy`),
the SQLite database and its -wal/-shm, memory and its lock."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from zapcli.capabilities.memory import MemoryStore


@contextmanager
def _umask(value: int) -> Iterator[None]:
    old = os.umask(value)  # the CLI subprocesses inherit it
    try:
        yield
    finally:
        os.umask(old)


def _loose(root: Path) -> list[str]:
    """Every folder under `root` (itself included) not 0700 and file not 0600."""
    out = []
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode) and mode != 0o700 or stat.S_ISREG(st.st_mode) and mode != 0o600:
            out.append(f"{path.relative_to(root.parent)} {oct(mode)}")
    return out


@pytest.mark.timeout(120)
def test_config_home_definitions_and_database_are_private(zap, tmp_path):
    draft = tmp_path / "draft.yml"
    draft.write_text("name: mine\ndescription: one of mine\ntools: [read]\n")
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    with _umask(0):
        for args in (("agents", "save", str(draft), "--scope", "system"),
                     ("agents", "copy", "explorer", "--as", "my-explorer"),
                     ("agents", "save", str(draft), "--scope", "workspace"),
                     ("agents", "copy", "explorer", "--as", "ws-explorer", "--to", "workspace"),
                     ("agents", "disable", "explorer"), ("agents", "model", "mine", "gpt-x")):
            zap(*args, check=True)
        sid = zap.spawn_sh("echo private")
        zap("wait", sid, check=True)
        zap("usage", check=True)
    assert (config / "subagents" / "mine.yml").exists() and (config / "subagents" / "my-explorer.yml").exists()
    assert (zap.home / "zapcli.db").exists()
    assert _loose(config) == []
    assert _loose(zap.cwd / ".zapcli") == []
    assert _loose(zap.home) == []


def test_memory_is_private(tmp_path):
    root = tmp_path / "ws" / ".zapcli" / "agent-memory" / "mine"
    store = MemoryStore(root)
    with _umask(0):
        store.write("notes.md", "first")
        store.write("notes.md", "second")
        store.write("MEMORY.md", "replaced", replace=True)
        store.write("today.md", "a day", daily=True)
    assert (root / "notes.md").read_text() == "first\nsecond\n"
    assert (root / "MEMORY.md").read_text() == "replaced"
    assert _loose(tmp_path / "ws" / ".zapcli") == []
