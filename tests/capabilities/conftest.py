"""Isolated folders and small builders for the capabilities tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import isolate
from zapcli.definitions import Definition, parse_definition


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch, trusted=True)  # the tests' own workspaces


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    return root


def _define(body: str, name: str = "t") -> Definition:
    definition, diags = parse_definition(f"name: {name}\ndescription: test agent\n{body}", "t.yml")
    assert definition is not None, [str(d) for d in diags]
    return definition


@pytest.fixture
def define():
    """define(yaml body after name/description, name="t") -> Definition."""
    return _define


def _skill(root: Path, name: str, description: str, body: str = "Do the thing.") -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


@pytest.fixture
def make_skill():
    """make_skill(root, name, description, body) -> SKILL.md path."""
    return _skill
