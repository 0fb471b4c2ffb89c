"""The config.yaml keys the seams own, for `zapcli.config.load_settings`:
`backends` (checked by `zapcli.backends.registry.section`), `executor` (an
executor's name) and each executor's own section, named after it (`ray:`,
checked by that executor).

Imports `zapcli.config`; the registries only when such a key is met, so a
config file without one costs nothing more. Pass `OWNERS` wherever settings
are loaded.
"""

from __future__ import annotations

from zapcli.config import Owners

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


class SeamOwners(Owners):
    env_keys = ("executor",)  # ZAPCLI_EXECUTOR

    def owns(self, key: str) -> bool:
        if key in ("backends", "executor"):
            return True
        from zapcli import executors

        return executors.owning(key) is not None

    def check(self, key: str, value: Any) -> Any:
        from zapcli import executors

        if key == "backends":
            from zapcli.backends.registry import section

            return section(value)
        if key == "executor":
            if not isinstance(value, str) or not value:
                raise ValueError(f"expected the name of an executor, got {value!r}")
            try:
                executors.get(value)
            except KeyError:
                raise ValueError(f"expected one of {', '.join(executors.names())}, "
                                 f"got {value!r}") from None
            except executors.Unusable as exc:
                raise ValueError(str(exc)) from None
            return value
        owner = executors.owning(key)
        if owner is None:
            raise KeyError(key)
        return owner.check_config(value)

    def names(self) -> tuple[str, ...]:
        from zapcli import executors

        return ("backends", "executor",
                *(n for n, e in executors.every().items() if e.config_keys))

    def not_from_workspace(self, key: str) -> str:
        if key == "backends":  # a command a cloned repository names would run as its user
            return "the commands an agent CLI runs as are set in your own config.yaml"
        # where tasks (and forwarded secrets) are sent is the user's call
        return ("a workspace cannot choose where your subagents run; set it in your own "
                "config.yaml or pass --executor")


OWNERS = SeamOwners()
