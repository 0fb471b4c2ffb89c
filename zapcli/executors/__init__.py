"""Where a subagent's runner runs (docs/explanation/rules.md#remote-execution): this machine, a cluster, or an
executor another package adds — the one place executor names come from.

Imports `zapcli.executors.base` and `zapcli.plugins`; an executor's module
only when it is asked for (`ray` talks to its cluster over HTTP and never
imports Ray), so no command pays for one it does not use. Built-ins are one
line each in `BUILTIN`; plugins are entry points in group `zapcli.executors`,
scanned only for a name that is not built in or for the whole list. An
executor with `config_keys` owns the config.yaml section of its name (`ray:`).
"""

from __future__ import annotations

from zapcli import plugins
from zapcli.executors.base import Executor

BUILTIN = {
    "local": "zapcli.executors.local:LocalExecutor",
    "ray": "zapcli.executors.ray:RayExecutor",
}
GROUP = "zapcli.executors"
DEFAULT = "local"
SEAM = plugins.Registry(GROUP, Executor, BUILTIN)
Unusable = plugins.Unusable  # installed (a plugin) but cannot be used: the message says why


def get(name: str | None) -> Executor:
    """The executor called `name` (None or "" = local). Raises KeyError for a
    name nobody registered, Unusable for a plugin that cannot be used."""
    return SEAM.get(name or DEFAULT)  # type: ignore[no-any-return]


def every() -> dict[str, Executor]:
    """Every usable executor by name (an unusable plugin is warned about once)."""
    return SEAM.every()


def names() -> tuple[str, ...]:
    return tuple(every())


def problems() -> list[str]:
    return SEAM.problems()


def owning(key: str) -> Executor | None:
    """The executor whose config.yaml section is `key`: an executor's section
    is its name, and only one that has `config_keys` has one."""
    try:
        executor = get(key)
    except (KeyError, Unusable):
        return None
    return executor if executor.config_keys else None
