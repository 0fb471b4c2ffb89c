"""What a hot process leaves out of `import pathlib`: the modules it binds for later.

Imports nothing. Up to Python 3.12, `import pathlib` imports `urllib.parse`
(and with it `ipaddress`), `re` and `fnmatch` (for `glob` and `match`) and
`ntpath` (for Windows paths), ~4-5 ms of a command that uses none of them
(`list`, `spawn`, `poll`, a runner; about 1 MB of a runner). `pathlib_alone()`,
called before anything imports pathlib, lets pathlib bind stand-ins instead:
`urllib.parse.quote_from_bytes`, which only `Path.as_uri()` calls, becomes a
function that imports the real one on first call; `re`, `fnmatch` and `ntpath`
become stand-in modules that import the real one at their first attribute
use (`Path.glob`, `Path.match`, a `PureWindowsPath`). The stand-ins are gone
from `sys.modules` before this returns: any other `import re` (json's, an
SDK's, a tool's) gets the real module, and pathlib's own uses reach it
through the stand-in. Python 3.13's pathlib imports these only where it uses
them: nothing changes there. A module already loaded is left as it is, and
so is a process where pathlib is (an editable install's import hook).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_LATER = ("re", "fnmatch", "ntpath")  # bound by pathlib as modules, used only inside its methods


class _Later(type(sys)):  # type: ignore[misc]
    """A module that is the real one from its first attribute use on."""

    def __getattr__(self, attr: str) -> object:
        name = str(self.__name__)
        if attr.startswith("__") or sys.modules.get(name) is self:
            raise AttributeError(attr)  # what the import system asks while pathlib is imported
        import importlib

        return getattr(importlib.import_module(name), attr)


def _quote_from_bytes(*args: object, **kwargs: object) -> str:
    """`urllib.parse.quote_from_bytes`, imported on first use."""
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(*args, **kwargs)  # type: ignore[arg-type]


def pathlib_alone() -> None:
    """Import pathlib without what it binds for later (see the module's docstring)."""
    if "pathlib" in sys.modules:
        return
    stand_ins: dict[str, Any] = {name: _Later(name) for name in _LATER if name not in sys.modules}
    parse = "urllib.parse"
    if parse not in sys.modules:
        import urllib  # noqa: F401 - the real package: only its submodule stands in

        stand_ins[parse] = type(sys)(parse)
        stand_ins[parse].quote_from_bytes = _quote_from_bytes
    sys.modules.update(stand_ins)
    try:
        import pathlib  # noqa: F401 - bound now, to the stand-ins
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
        package = sys.modules.get("urllib")
        if parse in stand_ins and getattr(package, "parse", None) is stand_ins[parse]:
            del package.parse  # type: ignore[union-attr]
