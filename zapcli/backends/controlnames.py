"""Every control file name: `zapcli.control`'s own list and what each backend
declares as its project settings (`control_files` on its class: the files
its CLI reads as configuration that runs commands), built-ins and plugins
alike — for the checks that must know them all (`zapcli merge`, `pick`).

Imports `zapcli.control`, `zapcli.paths`; `zapcli.backends.registry` only to
scan. A scan imports every backend and reads every installed package's entry
points (~150 ms), so its answer is kept in the state folder for as long as
zapcli's own backends and the installed packages stay as they were (the
modification times of zapcli's backend modules and of every folder on
`sys.path`, which installing or removing a package changes).
"""

from __future__ import annotations

import json
import os
import sys

from zapcli import control

CACHE = "control-names.json"  # in the state folder


def _stamp() -> list[object]:
    """What the answer depends on: this zapcli, its backend modules, the packages installed."""
    from zapcli import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    mine = []
    for folder in (here, os.path.join(here, "clis")):
        try:
            with os.scandir(folder) as it:
                mine += [(e.name, e.stat().st_mtime_ns) for e in it if e.name.endswith(".py")]
        except OSError:
            continue
    paths = []
    here_now = os.getcwd()
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here_now:
            continue  # `python -m` puts the working folder first: no package is installed there
        try:
            paths.append((entry, os.stat(entry).st_mtime_ns))
        except OSError:
            continue
    return [__version__, sorted(mine), paths]


def _scan() -> list[str]:
    from zapcli.backends import registry

    return sorted({str(n) for b in registry.every().values()
                   for n in getattr(b, "control_files", ()) or ()})


def names() -> tuple[str, ...]:
    """The whole list (`control.names` with every backend's own names)."""
    from zapcli.paths import state_dir, write_private

    path = state_dir() / CACHE
    stamp = json.loads(json.dumps(_stamp()))  # as it reads back
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("stamp") == stamp and isinstance(saved.get("names"), list):
            return control.names(str(n) for n in saved["names"])
    except (OSError, ValueError, AttributeError):
        pass
    found = _scan()
    try:
        write_private(path, json.dumps({"stamp": stamp, "names": found}).encode(), sync=False)
    except OSError:
        pass  # a state folder we cannot write: scanned again next time
    return control.names(found)
