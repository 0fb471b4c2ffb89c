"""A package imported with its `__init__` deferred (`zapcli.providers.sdk`
defers the `openai` SDK's catalogue packages). Imports only the standard
library.

`Finder(names)`, put on `sys.meta_path` while a library imports, answers for
the packages named: each is made as the path finder finds it (same file,
same search path, so its modules import as always and become its
attributes), but its `__init__` runs only when a name is asked of it that
is neither set yet nor one of its modules — then in full, under a lock,
once, and from then on it is the package as it is written. An `__init__`
that does nothing but re-export its modules' names (`from .mod import Name
as Name` lines: the SDK's type catalogues) is read, not run, for a name it
lists: the one module that name comes from is imported, not the ~60 others.
"""

from __future__ import annotations

import importlib
import os
import threading
from importlib.abc import Loader
from importlib.machinery import ModuleSpec, PathFinder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any


class Finder:
    """A meta path finder for the packages `names` (any other: None)."""

    def __init__(self, names: frozenset[str]):
        self.names = names

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name not in self.names:
            return None
        real = PathFinder.find_spec(name, path)
        if real is None or real.loader is None or not real.submodule_search_locations:
            return None  # not a package here (another version of the library): as it is
        spec = ModuleSpec(name, _Deferred(real), origin=real.origin, is_package=True)
        spec.submodule_search_locations = list(real.submodule_search_locations)
        spec.has_location = real.has_location
        spec.cached = real.cached
        return spec

    def invalidate_caches(self) -> None:
        pass


class _Deferred(Loader):
    """The loader of a deferred package: makes it, runs nothing of it."""

    def __init__(self, real: ModuleSpec):
        self.real = real

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: ModuleType) -> None:
        real, name = self.real, module.__name__
        folders = list(real.submodule_search_locations or ())
        lock, done = threading.RLock(), [False]

        def whole() -> None:
            with lock:
                if not done[0]:
                    done[0] = True
                    real.loader.exec_module(module)  # type: ignore[union-attr]
                    for hook, ours in (("__getattr__", __getattr__), ("__dir__", __dir__)):
                        if module.__dict__.get(hook) is ours:  # a plain package from now on
                            del module.__dict__[hook]

        def __getattr__(attr: str) -> Any:  # noqa: N807 - a module's own (PEP 562)
            if not (attr.startswith("__") and attr.endswith("__")):
                if any(os.path.exists(os.path.join(f, attr + ".py"))
                       or os.path.isfile(os.path.join(f, attr, "__init__.py")) for f in folders):
                    return importlib.import_module(f"{name}.{attr}")
                if not done[0]:
                    where = _names(real).get(attr)
                    if where is not None:  # `from .where import attr` is all its __init__ does for it
                        value = getattr(importlib.import_module(f"{name}.{where}"), attr)
                        module.__dict__.setdefault(attr, value)
                        return module.__dict__[attr]
                whole()
                if attr in module.__dict__:
                    return module.__dict__[attr]
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")

        def __dir__() -> list[str]:  # noqa: N807
            whole()
            return sorted(module.__dict__)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = __dir__  # type: ignore[method-assign]


_NAMES: dict[str, dict[str, str]] = {}


def _names(real: ModuleSpec) -> dict[str, str]:
    """{name: submodule} of a package whose `__init__` only re-exports names
    of its own modules (`from .mod import Name as Name` lines, a docstring,
    `from __future__`); empty for any other `__init__` (it runs whole)."""
    if real.name in _NAMES:
        return _NAMES[real.name]
    import ast

    found: dict[str, str] = {}
    try:
        with open(real.origin or "", "rb") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if (isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
                and "." not in node.module and all(a.name != "*" for a in node.names)):
            for a in node.names:
                found[a.asname or a.name] = node.module
            continue
        found = {}  # anything else: what it does is known only by running it
        break
    _NAMES[real.name] = found
    return found
