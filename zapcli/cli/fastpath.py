"""The fast path: parse common command lines without importing typer.

Imports only `zapcli.cli.argspec` (generated from the typer app's signatures)
and, once parsed, the command's `execute`. Typer stays the one declaration of
the interface and handles everything unusual: `parse` returns None for help,
unknown options, bad numbers, a missing argument — anything it is not sure
about — and the caller falls back to typer, which prints the proper message.
"""

from __future__ import annotations

from zapcli.cli.argspec import SPEC

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

_CONVERT = {"str": str, "int": int, "float": float}


def parse(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(command, params) for a plain command line, else None. A command of a
    group the table holds (`board claim`) is its two words."""
    if not argv:
        return None
    cmd, i = argv[0], 1
    if len(argv) > 1 and f"{cmd} {argv[1]}" in SPEC:
        cmd, i = f"{cmd} {argv[1]}", 2
    elif cmd not in SPEC or " " in cmd:
        return None
    spec = SPEC[cmd]
    options: dict[str, tuple[str, str, bool]] = spec["options"]
    params: dict[str, Any] = dict(spec["defaults"])
    for dest, _kind, multiple in options.values():
        if multiple:
            params[dest] = None
    positionals: list[str] = []
    n = len(argv)
    only_args = False
    while i < n:
        tok = argv[i]
        i += 1
        if only_args or tok == "-" or not tok.startswith("-"):
            positionals.append(tok)
            continue
        if tok == "--":
            only_args = True
            continue
        name, eq, value = tok.partition("=")
        if name not in options:
            return None  # -h, --help, unknown options: typer explains
        dest, kind, multiple = options[name]
        if kind == "flag":
            if eq:
                return None
            params[dest] = True
            continue
        if not eq:
            if i >= n:
                return None
            value = argv[i]
            i += 1
        try:
            converted = _CONVERT[kind](value)
        except ValueError:
            return None
        if multiple:
            params[dest] = (params[dest] or []) + [converted]
        else:
            params[dest] = converted
    args: list[tuple[str, str, int, bool]] = spec["args"]
    for dest, kind, nargs, required in args:
        if nargs == -1:
            if required and not positionals:
                return None
            try:
                params[dest] = [_CONVERT[kind](p) for p in positionals] or (None if not required else [])
            except ValueError:
                return None
            positionals = []
        elif positionals:
            try:
                params[dest] = _CONVERT[kind](positionals.pop(0))
            except ValueError:
                return None
        elif required:
            return None
    if positionals:
        return None
    return cmd, params


def run(argv: list[str]) -> int | None:
    """Execute a plain command line; None when typer must take over."""
    parsed = parse(argv)
    if parsed is None:
        return None
    cmd, params = parsed
    from importlib import import_module

    if " " in cmd:  # a group's command: its module is the group's, the function the command's
        group, sub = cmd.split(" ", 1)
        module = import_module(f"zapcli.cli.commands.{group}")
        fn = getattr(module, sub, None) or getattr(module, sub + "_")
        return fn(**params)  # type: ignore[no-any-return]
    name = cmd.replace("-", "_")
    if name == "continue":  # a Python keyword: its module is continue_
        name += "_"
    return import_module(f"zapcli.cli.commands.{name}").execute(**params)
