"""The shipped definitions are valid, useful, and read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from zapcli.definitions import GRANTABLE, discover

EXPECTED = {
    "general": {"bash", "read", "write", "edit", "glob", "grep"},
    "explorer": {"read", "glob", "grep"},
    "code-reviewer": {"bash", "read", "grep"},
    "test-runner": {"bash", "read"},
    "fixer": {"bash", "read", "edit", "write"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin(ws: Path, name: str) -> None:
    definition = discover(ws).get(name)
    assert definition is not None and definition.layer == "builtin"
    assert EXPECTED[name] <= set(definition.tools) <= set(GRANTABLE)
    assert len(definition.prompt) > 300 and len(definition.description) > 40
    assert definition.memory == "none" and not definition.mcp_servers


def test_read_only_builtins_cannot_write(ws: Path) -> None:
    catalog = discover(ws)
    for name in ("explorer", "code-reviewer", "test-runner"):
        assert not {"write", "edit"} & set(catalog.get(name).tools)
