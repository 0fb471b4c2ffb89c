"""Isolated state, config and home folders for the definitions tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolate


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch, trusted=True)  # the tests' own workspaces


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace (a git top-level) with an empty definitions folder."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".zapcli" / "subagents").mkdir(parents=True)
    return root


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def write():
    """write(folder, file name, text) -> path."""
    return _write
