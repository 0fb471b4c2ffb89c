"""Importing the SDK for stdio serving: only what stdio needs, so a client
that gives up after a few seconds (Gemini's `mcp list`: 5 s) gets its
`initialize` answer in time on a busy machine.

Imports nothing of zapcli but `zapcli.mcpserver.server` (after setting up).
The SDK's package `__init__`s (`mcp`, `mcp.server`) import its client (httpx),
the FastMCP layer and more, none of which a stdio server runs; and
sse_starlette, which the low-level server imports for HTTP, hooks into
uvicorn when it can import it (its graceful shutdown, HTTP only). So before
the first SDK import, `mcp` and `mcp.server` are made packages from their
specs without running their `__init__` (the submodules import as usual), and
`uvicorn` is marked absent (a None entry in `sys.modules`, which Python's
import system documents as "not importable"). Should the SDK not import
that way, everything is undone and it is imported as usual.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

SKIPPED_INITS = ("mcp", "mcp.server")
ABSENT = ("uvicorn",)


def stdio_server_module() -> ModuleType:
    """`zapcli.mcpserver.server`, its SDK imported for stdio only."""
    if "mcp" in sys.modules:  # imported already (in a test): nothing left to save
        return _server()
    made = _skip_inits()
    try:
        return _server()
    except (ImportError, AttributeError):  # an SDK laid out otherwise: the usual import
        _undo(made)
        return _server()


def _server() -> ModuleType:
    from zapcli.mcpserver import server

    return server


def _skip_inits() -> list[str]:
    made = []
    for name in ABSENT:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]
            made.append(name)
    for name in SKIPPED_INITS:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            break
        module = importlib.util.module_from_spec(spec)  # its __init__ is not run
        sys.modules[name] = module
        made.append(name)
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    return made


def _undo(made: list[str]) -> None:
    for name in made:
        sys.modules.pop(name, None)
    for name in [n for n in sys.modules if n == "mcp" or n.startswith(("mcp.", "zapcli.mcpserver."))]:
        if name != __name__:
            del sys.modules[name]
