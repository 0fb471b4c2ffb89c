"""The rooms and their one-way imports (README "Rooms"), checked with `ast`:
every room's forbidden imports, heavy modules kept off the parent side, the
executor and backend seams implemented, one way to end a subagent, and the
size rules (modules under 400 lines, functions under 80)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "zapcli"

ROOMS = {"cli", "ops", "render", "lifecycle", "executors", "supervisor", "trail", "backends",
         "runner", "host", "agent", "providers", "tools", "definitions", "capabilities",
         "testing", "toolapi", "mcpserver", "worktrees"}
# room -> rooms (or room.module) it must never import
FORBIDDEN = {
    "trail": ROOMS - {"trail"},
    "supervisor": ROOMS - {"supervisor"},
    "executors": {"cli", "ops", "render", "lifecycle", "backends", "runner", "host", "agent",
                  "providers", "tools", "definitions", "capabilities", "testing"},
    "lifecycle": {"cli", "ops", "render", "backends", "runner", "host", "agent", "providers",
                  "tools", "definitions", "capabilities", "testing"},
    "ops": {"cli", "render", "runner", "host", "agent", "providers", "tools", "testing",
            "backends.agent_run", "backends.sh", "backends.gate", "backends.external"},
    "render": {"cli", "runner", "host", "agent", "providers", "tools", "backends", "executors",
               "supervisor", "testing"},
    "backends": {"cli", "ops", "render", "runner", "testing"},
    "runner": {"cli", "ops", "render", "testing"},
    "host": {"cli", "ops", "render", "runner", "lifecycle", "executors", "trail", "supervisor",
             "backends", "testing"},
    "agent": ROOMS - {"agent"},
    "providers": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors", "trail",
                  "supervisor", "backends", "testing"},
    "tools": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors", "trail",
              "supervisor", "backends", "testing"},
    "definitions": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors",
                    "backends", "agent", "providers", "testing"},
    "capabilities": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors",
                     "backends", "providers", "testing"},
    "testing": ROOMS - {"testing"},
    # git only: who uses a tree and what gc may do is lifecycle's (SPEC §16)
    "worktrees": ROOMS - {"worktrees"},
    "toolapi": {"cli", "mcpserver", "agent", "providers", "tools", "runner", "host", "testing"},
    "mcpserver": {"cli", "agent", "providers", "tools", "runner", "host", "testing"},
}
ALLOWED = {"ops": {"tools.registry"}}  # the name catalog of the session's tool table
HEAVY = {"typer", "rich", "openai", "mcp", "ray"}
NO_HEAVY_ROOMS = {"ops", "trail", "supervisor", "lifecycle", "render", "executors", "worktrees",
                  "toolapi"}
# The Ray executor's cluster side: the pool (a Ray job), its node agent, and
# the one module of private Ray API. Only these import `ray`; nothing else
# imports them (the caller talks HTTP to the cluster).
RAY_NODE_SIDE = {"executors/ray_dispatch.py", "executors/ray_kv.py", "executors/ray_node.py"}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
MCP_ROOMS = {"mcpserver", "capabilities"}  # the server, and the gateway to a subagent's MCP servers
MCP_FILES = {"backends/clis/approval_server.py"}  # claude's --permission-prompt-tool server


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


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        yield path, rel, (rel.parts[0] if len(rel.parts) > 1 else None)


def test_every_folder_is_a_known_room():
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders <= ROOMS, f"new rooms need their rules here: {sorted(folders - ROOMS)}"


def test_imports_follow_the_arrows():
    bad = []
    for path, rel, room in _modules():
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] in HEAVY and room in NO_HEAVY_ROOMS and not (
                    parts[0] == "ray" and rel.as_posix() in RAY_NODE_SIDE):
                bad.append(f"{rel}: imports {name}")
            if room in FORBIDDEN and parts[0] == "zapcli" and len(parts) > 1:
                target = ".".join(parts[1:3])
                if target in ALLOWED.get(room, ()):
                    continue
                if parts[1] in FORBIDDEN[room] or target in FORBIDDEN[room]:
                    bad.append(f"{rel}: imports {name}")
    assert not bad, "\n".join(bad)


def test_only_cli_imports_typer_and_rich():
    bad = [f"{rel}: imports {name}" for path, rel, room in _modules() for name in _imports(path)
           if name.split(".")[0] in ("typer", "rich") and room != "cli"]
    assert not bad, "\n".join(bad)


def test_modules_and_functions_stay_small():
    bad = []
    for path, rel, _room in _modules():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            bad.append(f"{rel}: {text.count(chr(10))} lines (max {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    bad.append(f"{rel}:{node.lineno} {node.name}: {length} lines (max {MAX_FUNCTION_LINES})")
    assert not bad, "\n".join(bad)


def test_every_module_says_what_it_owns():
    bare = [str(rel) for path, rel, _ in _modules()
            if path.stat().st_size and ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) is None]
    assert not bare, bare


def test_the_seams_have_their_implementations():
    from zapcli import backends, executors
    from zapcli.backends.base import Backend
    from zapcli.executors.base import Executor

    for name in backends.NAMES:
        backend = backends.get(name)
        assert isinstance(backend, Backend) and type(backend).run is not Backend.run, name
    for name in executors.NAMES:
        executor = executors.get(name)
        assert isinstance(executor, Executor)
        for method in ("launch", "alive", "signal", "collect"):
            assert getattr(type(executor), method) is not getattr(Executor, method), (name, method)


def _status_appends(path: Path) -> list[int]:
    """Lines where a call writes a `status` record directly."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and any(
                isinstance(a, ast.Constant) and a.value == "status" for a in node.args[:2]):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("append", "write_sync", "append_record", "make"):
                hits.append(node.lineno)
    return hits


def test_only_the_trail_ends_a_subagent():
    """`trail.ending.end` and `TrailWriter.end` are the only ways to write a terminal
    status: "who ends a subagent" is `grep -rn '\\.end(' zapcli`."""
    bad = [f"{rel}:{line}" for path, rel, _ in _modules() for line in _status_appends(path)
           if rel.as_posix() not in ("trail/ending.py", "trail/writer.py")]
    assert not bad, bad


def test_only_the_server_and_the_gateway_import_mcp():
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).parts
        for name in _imports(path):
            if (name.split(".")[0] in ("mcp", "mcp_types") and rel[0] not in MCP_ROOMS
                    and "/".join(rel) not in MCP_FILES):
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


def test_only_the_node_side_imports_ray():
    """The caller talks HTTP to a Ray cluster: `ray` is imported only by the
    cluster side of the Ray executor (which runs inside the pool's Ray job),
    and no other module imports that side."""
    node_modules = {"zapcli." + m[:-3].replace("/", ".") for m in RAY_NODE_SIDE}
    bad = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        for name in _imports(path):
            if rel in RAY_NODE_SIDE:
                continue
            if name.split(".")[0] == "ray" or name in node_modules or any(
                    name.startswith(m + ".") for m in node_modules):
                bad.append(f"{path}: imports {name}")
    assert not bad, "\n".join(bad)
