"""Public test helpers for zapcli users (like `click.testing`): test definitions offline.
Imports only the standard library (and PyYAML when a YAML script is loaded).

    from zapcli.testing import ScriptedServer

    script = [{"match": "hello", "turns": [{"text": "hi there"}]}]
    with ScriptedServer(script) as srv:
        env = {"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "test"}
        ...  # run zapcli against it; srv.requests holds every request body

See `zapcli.testing.scripted_server` for the script format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zapcli.testing.scripted_server import ScriptedServer, ScriptError, load_script

__all__ = ["ScriptError", "ScriptedServer", "load_script"]


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m zapcli.testing.scripted_server` does not import itself twice.
    if name in __all__:
        from zapcli.testing import scripted_server

        return getattr(scripted_server, name)
    raise AttributeError(f"module 'zapcli.testing' has no attribute {name!r}")
