"""The rooms and their one-way imports (docs/explanation/architecture.md, "Rooms"), checked with `ast`:
every room's forbidden imports, the top-level modules (the kernel imports no
room; `config` nothing above `trail`), heavy modules kept off the parent side,
the executor and backend seams implemented, one way to end a subagent, status
words compared only in the trail's model, and the size rules (modules under
400 lines, functions under 80)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "zapcli"

ROOMS = {"cli", "ops", "render", "lifecycle", "executors", "supervisor", "trail", "backends",
         "runner", "host", "agent", "providers", "tools", "definitions", "capabilities",
         "testing", "toolapi", "mcpserver", "worktrees", "telemetry", "sandbox", "team", "tui", "api",
         "budget"}
# telemetry reads trails and is for the commands that export and the runner
# that follows its own trail (docs/explanation/rules.md#fleets-traces-teams): no other room, no hot command
_NOT_TELEMETRY = {"telemetry"}
# room -> rooms (or room.module) it must never import
FORBIDDEN = {
    "trail": ROOMS - {"trail"},
    "supervisor": ROOMS - {"supervisor"},
    "executors": {"cli", "ops", "render", "lifecycle", "backends", "runner", "host", "agent",
                  "providers", "tools", "definitions", "capabilities", "testing", "team"} | _NOT_TELEMETRY,
    "lifecycle": {"cli", "ops", "render", "backends", "runner", "host", "agent", "providers",
                  "tools", "definitions", "capabilities", "testing", "team"} | _NOT_TELEMETRY,
    "ops": {"cli", "render", "runner", "host", "agent", "providers", "tools", "testing",
            "backends.agent_run", "backends.sh", "backends.gate", "backends.external"} | _NOT_TELEMETRY,
    # the types a renderer shows are below it (lifecycle.status, zapcli.results), never a verb's
    "render": {"cli", "ops", "runner", "host", "agent", "providers", "tools", "backends", "executors",
               "supervisor", "testing", "team"} | _NOT_TELEMETRY,
    "backends": {"cli", "ops", "render", "runner", "testing"} | _NOT_TELEMETRY,
    "runner": {"cli", "ops", "render", "testing"},
    "host": {"cli", "ops", "render", "runner", "lifecycle", "executors", "trail", "supervisor",
             "backends", "testing", "team"} | _NOT_TELEMETRY,
    "agent": ROOMS - {"agent"},
    "providers": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors", "trail",
                  "supervisor", "backends", "testing", "team"} | _NOT_TELEMETRY,
    "tools": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors", "trail",
              "supervisor", "backends", "testing", "team"} | _NOT_TELEMETRY,
    "definitions": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors",
                    "backends", "agent", "providers", "testing", "team"} | _NOT_TELEMETRY,
    "capabilities": {"cli", "ops", "render", "runner", "host", "lifecycle", "executors",
                     "backends", "providers", "testing", "team"} | _NOT_TELEMETRY,
    "testing": ROOMS - {"testing"},
    # git only: who uses a tree and what gc may do is lifecycle's (docs/explanation/rules.md#parallel-coding)
    "worktrees": ROOMS - {"worktrees"},
    "toolapi": {"cli", "mcpserver", "agent", "providers", "tools", "runner", "host", "testing"} | _NOT_TELEMETRY,
    "mcpserver": {"cli", "agent", "providers", "tools", "runner", "host", "testing"} | _NOT_TELEMETRY,
    # made from trails: the trail room and the top-level modules (tracecontext, redact, errors, paths)
    "telemetry": ROOMS - {"telemetry", "trail"},
    # the board and sibling messages (docs/explanation/rules.md#fleets-traces-teams): below every surface that offers them (the CLI,
    # ops, the built-in agent's backend, the MCP servers), above what they observe (lifecycle,
    # trail); its text is the board's renderer
    "team": {"cli", "ops", "runner", "host", "backends", "providers", "tools", "testing",
             "toolapi", "mcpserver", "capabilities", "definitions", "worktrees",
             "sandbox"} | _NOT_TELEMETRY,
    # the one budget policy (docs/explanation/rules.md#budgets): usage in from every backend, a decision out; it acts
    # through what its callers hand it, and knows no backend, verb or surface
    "budget": ROOMS - {"budget", "lifecycle", "trail", "supervisor", "executors"},
    # the OS sandbox: paths come in from its callers (see test_the_sandbox_stands_alone)
    "sandbox": ROOMS - {"sandbox"},
    # `zapcli top` (the optional `tui` extra): it looks through the lifecycle and acts
    # through the ops verbs, never by a backend's or the runner's own code
    "tui": {"cli", "runner", "host", "agent", "providers", "tools", "backends", "testing",
            "toolapi", "mcpserver", "telemetry", "sandbox", "worktrees", "api"},
    # the Python API: a surface beside the CLI, on the same ops and renderers
    "api": {"cli", "toolapi", "mcpserver", "agent", "providers", "tools", "runner", "host",
            "testing", "tui"} | _NOT_TELEMETRY,
}
# the name catalog of the session's tool table; a board task names the tools it needs from it
ALLOWED = {"ops": {"tools.registry"}, "team": {"tools.registry"}}
# The top-level modules (errors, plain, ids, paths, locks, redact, ledger, ...) are the kernel
# every room may import: they import no room. Two have rules of their own:
TOP_LEVEL = {
    "__main__": None,  # `python -m zapcli`: the CLI's entry, may import anything
    "__init__": {"api"},  # the package's face: the Python API, re-exported lazily
    "config": {"trail"},  # settings: the kernel and the trail, nothing above it
}
HEAVY = {"typer", "rich", "openai", "mcp", "ray", "opentelemetry"}
NO_HEAVY_ROOMS = {"ops", "trail", "supervisor", "lifecycle", "render", "executors", "worktrees",
                  "toolapi", "telemetry", "sandbox", "team", "api", "budget"}
# The Ray executor's cluster side: the pool (a Ray job), its node agent, and
# the one module of private Ray API. Only these import `ray`; nothing else
# imports them (the caller talks HTTP to the cluster).
RAY_NODE_SIDE = {"executors/ray_dispatch.py", "executors/ray_kv.py", "executors/ray_node.py",
                 "executors/ray_agents.py", "executors/ray_place.py"}
HEAVY_HOME = {**{m: {"ray"} for m in RAY_NODE_SIDE},  # the one place each may be imported lazily
              "telemetry/otlp.py": {"opentelemetry"}}
# a backstop, not a target: split where the concepts part, never to get under it (a
# 450-line module holding one idea beats two that each need the other to be read)
MAX_MODULE_LINES = 450
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
            if parts[0] in HEAVY and room in NO_HEAVY_ROOMS and parts[0] not in HEAVY_HOME.get(
                    rel.as_posix(), set()):
                bad.append(f"{rel}: imports {name}")
            if room in FORBIDDEN and parts[0] == "zapcli" and len(parts) > 1:
                target = ".".join(parts[1:3])
                if target in ALLOWED.get(room, ()):
                    continue
                if parts[1] in FORBIDDEN[room] or target in FORBIDDEN[room]:
                    bad.append(f"{rel}: imports {name}")
    assert not bad, "\n".join(bad)


def _kernel() -> set[str]:
    return {p.stem for p in PKG.glob("*.py")} - set(TOP_LEVEL)


def _zapcli_target(name: str) -> str | None:
    """The room or top-level module an import of `zapcli.X...` reaches."""
    parts = name.split(".")
    return parts[1] if parts[0] == "zapcli" and len(parts) > 1 else None


def test_the_kernel_imports_no_room():
    """Lazy imports count too: a kernel module that needs a room belongs in it."""
    kernel = _kernel()
    bad = [f"{rel}: imports {name}" for path, rel, room in _modules() if room is None
           and path.stem in kernel for name in _imports(path)
           if (target := _zapcli_target(name)) is not None and target not in kernel]
    assert not bad, "\n".join(bad)


def test_config_imports_nothing_above_the_trail():
    allowed = _kernel() | TOP_LEVEL["config"]
    bad = [name for name in _imports(PKG / "config.py")
           if (target := _zapcli_target(name)) is not None and target not in allowed]
    assert not bad, bad


def test_only_cli_imports_typer_and_rich():
    """The two front ends: the CLI, and `top` (Textual draws with rich; typer stays the CLI's)."""
    bad = [f"{rel}: imports {name}" for path, rel, room in _modules() for name in _imports(path)
           if (name.split(".")[0] == "typer" and room != "cli")
           or (name.split(".")[0] == "rich" and room not in ("cli", "tui"))]
    assert not bad, "\n".join(bad)


def test_only_top_reaches_the_tui_and_only_the_tui_imports_textual():
    """`zapcli[tui]` is optional: Textual is imported by the tui room alone,
    and the tui room by the `top` command alone (lazily, once Textual is
    known to be there), so every other command works without it."""
    bad = [f"{rel}: imports {name}" for path, rel, room in _modules() for name in _imports(path)
           if (name.split(".")[0] == "textual" and room != "tui"
               and rel.as_posix() != "cli/commands/top.py")
           or (name.startswith("zapcli.tui") and room != "tui"
               and rel.as_posix() != "cli/commands/top.py")]
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
    from zapcli import executors
    from zapcli.backends import registry
    from zapcli.backends.base import Backend
    from zapcli.executors.base import Executor

    for name in registry.BUILTIN:
        backend = registry.get(name)
        assert isinstance(backend, Backend) and type(backend).run is not Backend.run, name
        assert backend.name == name and backend.summary, name
    for name in executors.BUILTIN:
        executor = executors.get(name)
        assert isinstance(executor, Executor) and executor.name == name
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


def test_only_the_otlp_module_imports_opentelemetry():
    """The SDK is an optional extra (`zapcli[otel]`), imported only to send
    spans: one module, reached only when OTEL_* asks for traces or a
    command exports them."""
    bad = [f"{rel}: imports {name}" for path, rel, _room in _modules() for name in _imports(path)
           if name.split(".")[0] == "opentelemetry" and rel.as_posix() != "telemetry/otlp.py"]
    assert not bad, "\n".join(bad)


def test_telemetry_is_reached_only_from_the_cli_and_the_runner():
    bad = [f"{rel}: imports {name}" for path, rel, room in _modules() for name in _imports(path)
           if name.startswith("zapcli.telemetry") and room not in ("cli", "runner", "telemetry")]
    assert not bad, "\n".join(bad)


# Comparisons with a status word that are about something else: (module, the
# expression compared) -> whose word it is.
OTHER_STATUS_WORDS = {
    ("agent/loop.py", "reason.lower()"): "a word in the text of a stop reason",
    ("backends/clis/claude_events.py", "status"): "a claude background task's status",
    ("backends/clis/codex_events.py", "status"): "codex's item status",
    ("backends/clis/codex_events.py", "phase"): "codex's item phase",
    ("backends/clis/opencode.py", "state.get('status')"): "opencode's tool state",
    ("backends/external.py", "ending"): "why the runner stopped the CLI: cancelled, timeout, budget",
    ("capabilities/mcp_gateway.py", "self.status.get(server)"): "an MCP server's state",
    ("capabilities/mcp_gateway.py", "self.gateway.status[server]"): "an MCP server's state",
    ("ops/doctor.py", "st"): "an MCP server's state",
    ("lifecycle/observe.py", "s.finish"): "an on-finish command's states (claimed, running, done)",
    ("trail/finish.py", "r.get('state')"): "an on-finish command's states (claimed, running, done)",
    ("runner/tree.py", "done.why"): "why a worktree hook stopped (worktrees.hooks)",
    ("testing/responses.py", "status"): "the Responses API's status of a response",
}


def _status_words(node: ast.AST, words: frozenset[str]) -> bool:
    """`node` is a string constant naming a status, or a literal tuple/list/set holding one."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_status_words(e, words) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words


def test_statuses_are_compared_only_in_the_trail_model():
    """`view.status == "queued"` or `in ("completed", ...)` elsewhere: use
    `Status` and its predicates (`terminal`, `live`), so the set of statuses
    and what each means live in one place (`trail/model.py`)."""
    from zapcli.trail.model import ALL

    words = frozenset(ALL)
    bad = []
    for path, rel, _room in _modules():
        if rel.as_posix() == "trail/model.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            for a, b in zip(operands, operands[1:], strict=False):
                for word, other in ((a, b), (b, a)):
                    if _status_words(word, words) and (
                            rel.as_posix(), ast.unparse(other)) not in OTHER_STATUS_WORDS:
                        bad.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert not bad, "\n".join(bad)


def test_backend_and_executor_names_are_listed_only_by_their_registries():
    """docs/explanation/rules.md#plugins: every list of backends or executors (help, enums, completion,
    checks) is derived from `backends.registry` / `executors`; no other module
    spells out two of their names in one literal."""
    from zapcli import executors
    from zapcli.backends import registry

    homes = {"backends/registry.py": set(registry.BUILTIN), "executors/__init__.py": set(executors.BUILTIN)}
    bad = []
    for path, rel, _room in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                words = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
                for home, names in homes.items():
                    if len(words & names) >= 2 and rel.as_posix() != home:
                        bad.append(f"{rel}:{node.lineno}: {sorted(words & names)}")
    assert not bad, "\n".join(bad)


def test_the_sandbox_stands_alone():
    """The sandbox room imports the standard library, itself, the one
    approval decision (what a mode lets a command write), the one list of
    control files (what stays read-only in every writable root) and the
    house's data classes (`zapcli.plain`, which imports nothing); its helper
    (`inner.py`) runs by path inside the sandbox, so it imports nothing of
    zapcli at all."""
    bad = []
    for path in sorted((PKG / "sandbox").glob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "zapcli":
                continue
            allowed = () if path.name == "inner.py" else ("sandbox", "approvals", "control", "plain")
            if len(parts) < 2 or parts[1] not in allowed:
                bad.append(f"sandbox/{path.name}: imports {name}")
    assert not bad, "\n".join(bad)
