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
    "toolapi": {"cli", "mcpserver", "agent", "providers", "tools", "runner", "host"},
    "mcpserver": {"cli", "agent", "providers", "tools", "runner", "host"},
}
ALLOWED = {"ops": {"tools.registry"}}  # the name catalog of the session's tool table
HEAVY = {"typer", "rich", "openai", "mcp"}
NO_HEAVY_ROOMS = {"ops", "trail", "supervisor", "toolapi"}
MCP_ROOMS = {"mcpserver", "capabilities"}  # the server, and the gateway to a subagent's MCP servers


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


def test_only_the_server_and_the_gateway_import_mcp():
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).parts
        for name in _imports(path):
            if name.split(".")[0] in ("mcp", "mcp_types") and rel[0] not in MCP_ROOMS:
                bad.append(f"{path}: imports {name}")
    assert not bad, "\n".join(bad)


def test_call_and_tool_schema_never_load_mcp_or_typer(tmp_path):
    """`zapcli call` is on the fast path: a harness pays for it on every call."""
    import os
    import subprocess
    import sys

    code = ("import sys; from zapcli.cli.entry import main; main(['call', '{\"action\": \"list\"}']); "
            "main(['tool-schema']); print(sorted(m for m in ('mcp', 'typer', 'rich', 'openai') "
            "if m in sys.modules))")
    env = dict(os.environ, ZAPCLI_HOME=str(tmp_path / "h"), ZAPCLI_CONFIG_HOME=str(tmp_path / "c"),
               ZAPCLI_SESSION="arch", PYTHONPATH=str(PKG.parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
