"""A package's public names imported from their modules on first use
(PEP 562's module `__getattr__`): importing the package itself costs only
its `__init__`; and regular expressions compiled at their first use
(`Pattern`). Imports nothing at module level."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def names(package: str, where: dict[str, str], namespace: dict[str, object]) -> Callable[[str], object]:
    """The `__getattr__` of `package` (its `__name__`), whose public name N lives
    in `package.where[N]`; a name found is kept in `namespace` (its `globals()`)."""
    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value
    return __getattr__


class Pattern:
    """A regular expression compiled at its first use (`sub`, `match`,
    `finditer`... are the compiled pattern's): a module's patterns cost each
    process that imports it their compiling (~0.5 ms each) whether it uses
    them or not."""

    __slots__ = ("_text", "_flags", "_compiled")

    def __init__(self, text: str, flags: int = 0) -> None:
        self._text, self._flags = text, flags
        self._compiled: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self._text, self._flags)
        return getattr(self._compiled, name)
