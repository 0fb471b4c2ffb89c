"""Where a subagent's runner runs (SPEC §15): this machine, or a cluster.

Imports `zapcli.executors.base`; each executor module imports its own engine
lazily (the Ray client only in `ray`), so no command pays for one it does not use.
"""

from __future__ import annotations

from zapcli.executors.base import Executor

NAMES = ("local",)


def get(name: str | None) -> Executor:
    """The executor called `name` (None or "" = local). Raises KeyError."""
    if not name or name == "local":
        from zapcli.executors.local import LocalExecutor

        return LocalExecutor()
    raise KeyError(name)
