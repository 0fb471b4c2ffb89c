"""A package's public names imported from their modules on first use
(PEP 562's module `__getattr__`): importing the package itself costs only
its `__init__`. Imports nothing at module level."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable


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
