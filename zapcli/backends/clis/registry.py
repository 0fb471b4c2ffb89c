"""Which agent CLIs zapcli knows, how each is found, and the `backends` key
of config.yaml (SPEC §13). Imports only the standard library and, lazily,
the adapter modules of `zapcli.backends.clis`.

Built-in names: claude, codex, gemini, opencode, each with its adapter and
event format. `backends.<name>` in config.yaml may give a built-in another
`command` (a path, or an argv list such as `[node, /opt/claude/cli.js]`), or
define a new backend: a `command` plus one of the four event `format`s, so a
wrapper or a fork (qwen-code speaks claude's stream-json) needs no code; it
is started with the flags of the CLI whose format it speaks.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import Any

BUILTIN = ("claude", "codex", "gemini", "opencode")
FORMATS = {"claude-stream-json": "claude", "codex-json": "codex",
           "gemini-stream-json": "gemini", "opencode-json": "opencode"}
_ADAPTERS = {"claude": "zapcli.backends.clis.claude:ClaudeAdapter",
             "codex": "zapcli.backends.clis.codex:CodexAdapter",
             "gemini": "zapcli.backends.clis.gemini:GeminiAdapter",
             "opencode": "zapcli.backends.clis.opencode:OpencodeAdapter"}
INSTALL = {"claude": "npm install -g @anthropic-ai/claude-code",
           "codex": "npm install -g @openai/codex",
           "gemini": "npm install -g @google/gemini-cli",
           "opencode": "npm install -g opencode-ai"}
RESERVED = ("zapcli", "sh")
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def adapter(kind: str) -> Any:
    """A fresh Adapter of the built-in CLI `kind` (claude, codex, gemini, opencode)."""
    from importlib import import_module

    module, _, cls = _ADAPTERS[kind].partition(":")
    return getattr(import_module(module), cls)()


def check_backends(value: Any) -> dict[str, dict[str, Any]]:
    """Validate config.yaml's `backends` mapping; raises ValueError saying what
    is wrong. Returns {name: {"command": [argv] | None, "format": str}}."""
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of backend name to {command, format}")
    out: dict[str, dict[str, Any]] = {}
    for name, spec in value.items():
        if not isinstance(name, str) or not _NAME.match(name) or name in RESERVED:
            raise ValueError(f"backend name {name!r}: use lower-case letters, digits, - and _ "
                             f"(not {' or '.join(RESERVED)})")
        if not isinstance(spec, dict) or set(spec) - {"command", "format"}:
            raise ValueError(f"backends.{name}: expected keys command and format only")
        command = spec.get("command")
        if isinstance(command, str) and command.strip():
            argv = [command]
        elif isinstance(command, list) and command and all(
                isinstance(a, str) and a for a in command):
            argv = list(command)
        elif command is None and name in BUILTIN:
            argv = None
        else:
            raise ValueError(f"backends.{name}.command: expected a program (path or name on "
                             "PATH) or a non-empty list of arguments")
        fmt = spec.get("format", FORMAT_OF.get(name))
        if fmt not in FORMATS:
            raise ValueError(f"backends.{name}.format: expected one of {', '.join(FORMATS)}, "
                             f"got {fmt!r}")
        if name in BUILTIN and fmt != FORMAT_OF[name]:
            raise ValueError(f"backends.{name}.format: {name} speaks {FORMAT_OF[name]}")
        out[name] = {"command": argv, "format": fmt}
    return out


FORMAT_OF = {kind: fmt for fmt, kind in FORMATS.items()}


def names(configured: dict[str, Any] | None = None) -> tuple[str, ...]:
    """Every agent-CLI backend name: the built-ins, then those config.yaml adds."""
    extra = [n for n in (configured or {}) if n not in BUILTIN]
    return BUILTIN + tuple(sorted(extra))


@dataclass(frozen=True)
class Found:
    """A backend resolved for one spawn: its argv prefix and how it speaks."""

    name: str
    command: tuple[str, ...]
    format: str

    @property
    def kind(self) -> str:
        """The built-in CLI whose flags and events it uses."""
        return FORMATS[self.format]

    def frozen(self) -> dict[str, Any]:
        return {"name": self.name, "command": list(self.command), "format": self.format}


class NotInstalled(Exception):
    """The backend's program is not there; the message says what to install."""


def _program(prog: str, path: str | None) -> str | None:
    if os.sep in prog:
        full = os.path.abspath(os.path.expanduser(prog))
        return full if os.path.isfile(full) and os.access(full, os.X_OK) else None
    return shutil.which(prog, path=path)


def find(name: str, configured: dict[str, Any] | None = None,
         path: str | None = None) -> Found:
    """Resolve backend `name` to its program: `backends.<name>.command` from
    config, else the CLI's binary on PATH. Raises KeyError for an unknown name,
    NotInstalled when the program is missing."""
    spec = (configured or {}).get(name)
    if spec is None and name not in BUILTIN:
        raise KeyError(name)
    fmt = spec["format"] if spec else FORMAT_OF[name]
    argv = list(spec["command"]) if spec and spec.get("command") else [name]
    prog = _program(argv[0], path)
    if prog is None:
        kind = FORMATS[fmt]
        if spec and spec.get("command"):
            where = f"backends.{name}.command in config.yaml names {argv[0]!r}, which is not " \
                    "an executable program"
        else:
            where = f"the {name} CLI is not installed (no `{argv[0]}` on PATH)"
        hint = f"install it: {INSTALL[kind]}, or " if name in BUILTIN else ""
        raise NotInstalled(f"{where}; {hint}set backends.{name}.command in config.yaml to its "
                           "path")
    return Found(name, (prog, *argv[1:]), fmt)
