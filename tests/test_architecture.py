"""One-way imports (DESIGN.md): walk the package with `ast` and fail on any
import against the arrows, and keep heavy modules off the parent side."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "zapcli"

# room -> rooms it must never import
FORBIDDEN = {
    "trail": {"supervisor", "ops", "cli", "agent", "backends", "providers", "tools"},
    "supervisor": {"trail", "ops", "cli", "agent", "backends", "providers", "tools"},
    "ops": {"cli", "agent", "providers", "tools", "backends.agent_run", "runner"},
    "agent": {"trail", "supervisor", "ops", "cli", "backends", "host", "runner", "lifecycle"},
    "providers": {"trail", "supervisor", "ops", "cli", "backends"},
    "tools": {"trail", "supervisor", "ops", "cli", "backends"},
    "definitions": {"cli", "ops", "backends", "agent", "providers"},
    "capabilities": {"cli", "ops", "backends", "providers"},
    "executors": {"cli", "ops", "agent", "backends", "providers", "tools", "host", "runner", "lifecycle"},
}
ALLOWED = {"ops": {"tools.registry"}}  # the name catalog of the session's tool table
HEAVY = {"typer", "rich", "openai", "mcp"}
NO_HEAVY_ROOMS = {"ops", "trail", "supervisor"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_imports_follow_the_arrows():
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).parts
        room = rel[0] if len(rel) > 1 else None
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] in HEAVY and room in NO_HEAVY_ROOMS:
                bad.append(f"{path}: imports {name}")
            if room in FORBIDDEN and parts[0] == "zapcli" and len(parts) > 1:
                target = ".".join(parts[1:3])
                if target in ALLOWED.get(room, ()):
                    continue
                if parts[1] in FORBIDDEN[room] or target in FORBIDDEN[room]:
                    bad.append(f"{path}: imports {name}")
    assert not bad, "\n".join(bad)


def test_only_cli_imports_typer_and_rich():
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).parts
        for name in _imports(path):
            if name.split(".")[0] in ("typer", "rich") and rel[0] != "cli":
                bad.append(f"{path}: imports {name}")
    assert not bad, "\n".join(bad)


def test_only_the_node_side_imports_ray():
    """The caller talks HTTP to a Ray cluster: `ray` is imported only by the
    node side of the Ray executor (which runs inside a Ray job)."""
    bad = []
    for path in PKG.rglob("*.py"):
        if path.relative_to(PKG).parts == ("executors", "ray_node.py"):
            continue
        for name in _imports(path):
            if name.split(".")[0] == "ray":
                bad.append(f"{path}: imports {name}")
    assert not bad, "\n".join(bad)
