"""zapcli: parallel LLM subagents as ordinary background OS processes.

The package is usable without its CLI: `zapcli.api` is the Python API (the
CLI's verbs as functions with typed results, and `zapcli.api.aio` for
asyncio), re-exported here: `zapcli.spawn(...)`, `zapcli.wait(...)`. The
names are loaded when first used (PEP 562), so `import zapcli` and the CLI's
start import nothing of the API. `zapcli.ops` holds what each command does;
`zapcli.cli` only parses arguments and renders results.
"""

__version__ = "0.1.0"

_API = frozenset({
    "spawn", "spawn_attempts", "poll", "wait", "list", "kill", "output", "send", "approve",
    "deny", "aio", "api", "Spawned", "Subagent", "Output", "PollResult", "WaitResult", "Listing",
    "Killed", "KillResult", "CapturedOutput", "Sent", "Decision", "Status", "ZapcliError",
    "UsageError", "NotFound", "ConfigError", "StateError",
})


def __getattr__(name: str) -> object:
    """The API's names, imported on first use."""
    if name not in _API:
        raise AttributeError(f"module 'zapcli' has no attribute {name!r}")
    import importlib

    api = importlib.import_module("zapcli.api")
    return api if name == "api" else getattr(api, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
