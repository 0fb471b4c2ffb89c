"""Where a subagent's runner runs (SPEC §15): this machine, or a cluster.

Imports `zapcli.executors.base`; each executor module imports its own engine
lazily (`ray` talks to its cluster over HTTP and never imports Ray), so no command pays for one it does not use.
"""

from __future__ import annotations

from zapcli.executors.base import Executor

NAMES = ("local", "ray")


def get(name: str | None) -> Executor:
    """The executor called `name` (None or "" = local). Raises KeyError."""
    if not name or name == "local":
        from zapcli.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from zapcli.executors.ray import RayExecutor

        return RayExecutor()
    raise KeyError(name)
