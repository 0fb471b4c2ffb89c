"""What a subagent runs (the `--cli` option): `sh`, `zapcli` (the built-in
agent), and other agent CLIs next.

Imports `zapcli.backends.base`; each backend module is imported only by the
runner that runs it (`get`), and `zapcli.backends.resolve` holds the light
spawn-time side the parent commands use.
"""

from __future__ import annotations

from zapcli.backends.base import Backend

NAMES = ("zapcli", "sh")
_CLASSES = {"zapcli": "zapcli.backends.agent_run:AgentBackend", "sh": "zapcli.backends.sh:ShBackend"}


def get(name: str) -> Backend:
    """The backend called `name`. Raises KeyError for an unknown one."""
    from importlib import import_module

    module, _, cls = _CLASSES[name].partition(":")
    return getattr(import_module(module), cls)()  # type: ignore[no-any-return]
