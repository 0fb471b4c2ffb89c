"""What a subagent runs (the `--cli` option): `sh`, `zapcli` (the built-in
agent), and the agent CLIs claude, codex, gemini, opencode (SPEC §13) plus
any `backends.<name>` config.yaml defines.

Imports `zapcli.backends.base`; each backend module is imported only by the
runner that runs it (`get`), and `zapcli.backends.resolve` holds the light
spawn-time side the parent commands use.
"""

from __future__ import annotations

from zapcli.backends.base import Backend

CLIS = ("claude", "codex", "gemini", "opencode")
NAMES = ("zapcli", "sh", *CLIS)
_CLASSES = {"zapcli": "zapcli.backends.agent_run:AgentBackend", "sh": "zapcli.backends.sh:ShBackend"}
_CLI_CLASS = "zapcli.backends.external:CliBackend"


def get(name: str) -> Backend:
    """The backend called `name`: any name other than zapcli and sh is an agent
    CLI (a built-in or one config.yaml defined; spawn checked it), run from
    the spawn record's frozen `backend`. Raises KeyError for an empty name."""
    from importlib import import_module

    if not name:
        raise KeyError(name)
    module, _, cls = _CLASSES.get(name, _CLI_CLASS).partition(":")
    return getattr(import_module(module), cls)()  # type: ignore[no-any-return]
