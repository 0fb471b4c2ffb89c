"""How zapcli starts a Python process of its own: `python_m` (a module, as
`python -m`) and `python_c` (a few lines, as `python -c`). Imports only `sys`.

Python puts the working folder first on the module path of `-m` and `-c`,
and zapcli starts its own processes in folders an agent or a cloned
repository wrote (a subagent's runner in the subagent's folder, the helpers
it starts there, an agent CLI's approval and team servers in its
workspace): a `threading.py`, `json.py` or `zapcli/` there would run as
zapcli, outside the sandbox, with the user's keys, before any trust check.
So every such process is started without the working folder on its path:
`-P` (Python 3.11+), else a first line that takes it off before anything
is imported. The module path is otherwise the interpreter's own
(`PYTHONPATH`'s absolute entries included: `paths.own_module_path` drops
the empty and relative ones, which name the working folder): plugins
installed for it are found as before.
"""

from __future__ import annotations

import sys

SAFE_PATH_FLAG = sys.version_info >= (3, 11)  # -P: no unsafe first entry on the module path
_OFF = "import sys\nif sys.path and sys.path[0] in ('', '.'): del sys.path[0]\n"
_RUN = ("import runpy\nsys.argv[:2] = [sys.argv[1]]\n"
        "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n")


def python_m(module: str, *args: str, python: str | None = None) -> list[str]:
    """argv of `python -m module args…`, the working folder never on its path."""
    exe = python or sys.executable
    if SAFE_PATH_FLAG:
        return [exe, "-P", "-m", module, *args]
    return [exe, "-c", _OFF + _RUN, module, *args]


def python_m_any(module: str, *args: str, python: str) -> list[str]:
    """argv of `python -m module args…` for an interpreter of unknown version
    (another machine's): its first line takes the working folder off the path."""
    return python_c_any(_RUN, module, *args, python=python)


def python_c_any(code: str, *args: str, python: str) -> list[str]:
    """argv of `python -c code args…` for an interpreter of unknown version."""
    return [python, "-c", _OFF + code, *args]


def python_c(code: str, *args: str, python: str | None = None,
             flags: tuple[str, ...] = ()) -> list[str]:
    """argv of `python [flags] -c code args…`, the working folder never on its path."""
    exe = python or sys.executable
    if SAFE_PATH_FLAG:
        return [exe, *flags, "-P", "-c", code, *args]
    return [exe, *flags, "-c", _OFF + code, *args]


ENTRY = "from zapcli.cli.entry import main; raise SystemExit(main())"


def zapcli_argv(*args: str) -> list[str]:
    """argv of zapcli's own CLI in a process of its own, as `python -m zapcli
    args…` but without `runpy` (and the importlib.util, contextlib and
    collections it imports first): a few ms of every runner's start."""
    return python_c(ENTRY, *args)


def is_zapcli(argv: list[str]) -> int:
    """How many leading items of `argv` start zapcli's own CLI (`python -P -m
    zapcli`, `zapcli_argv`), or 0: to show such a command as `zapcli …`."""
    for head in (python_m("zapcli"), python_c(ENTRY)):
        if argv[:len(head)] == head:
            return len(head)
    plain = [sys.executable, "-m", "zapcli"]
    return len(plain) if argv[:3] == plain else 0
