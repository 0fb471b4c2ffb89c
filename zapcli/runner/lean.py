"""What a runner leaves out of its own start: `pathlib` without `urllib.parse`.

Imports nothing. Up to Python 3.12, `import pathlib` imports `urllib.parse`
(and with it `ipaddress`: ~0.5 MB of a shell runner's ~13 and ~2 ms) for one
function, `quote_from_bytes`, which only `Path.as_uri()` calls and a runner
never does. `pathlib_alone()`, called before anything imports pathlib, lets
pathlib bind a stand-in for that one function that imports the real one on
first call; the stand-in is gone from `sys.modules` before this returns, so
any other `import urllib.parse` (an SDK's, a tool's) gets the real module.
Python 3.13's pathlib imports it only in `as_uri` itself: nothing changes
there. A process where pathlib or urllib.parse is already loaded (an
editable install's import hook) is left as it is.
"""

from __future__ import annotations

import sys


def _quote_from_bytes(*args: object, **kwargs: object) -> str:
    """`urllib.parse.quote_from_bytes`, imported on first use."""
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(*args, **kwargs)  # type: ignore[arg-type]


def pathlib_alone() -> None:
    """Import pathlib without urllib.parse (see the module's docstring)."""
    name = "urllib.parse"
    if "pathlib" in sys.modules or name in sys.modules:
        return
    import urllib  # the real package: only its submodule stands in

    stand_in = type(sys)(name)
    stand_in.quote_from_bytes = _quote_from_bytes  # type: ignore[attr-defined]
    sys.modules[name] = stand_in
    try:
        import pathlib  # noqa: F401 - bound now, to the stand-in's function
    finally:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        if getattr(urllib, "parse", None) is stand_in:
            del urllib.parse
