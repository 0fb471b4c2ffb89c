"""MCP server configuration (`mcp.json`, system then workspace): read, check, freeze.
Imports json, zapcli.paths, zapcli.boundedread and zapcli.trust only — never the `mcp` SDK.

Format: `{"mcpServers": {name: {"command": str, "args": [str], "env": {str: str},
"allow": [tool names approved without asking]}}}`. The workspace file overrides
the system file server by server — once the person trusted it (`zapcli.trust`):
until then no server of it starts, anywhere. Problems are diagnostics, never exceptions.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from zapcli import trust
from zapcli.boundedread import larger_than, read_at_most
from zapcli.paths import config_dir
from zapcli.plain import field
from zapcli.plain import frozen as _frozen  # `frozen` is a method's name here

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

MAX_FILE_BYTES = 256 * 1024  # mcp.json: a few servers, never more

_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.I)
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SERVER_KEYS = ("command", "args", "env", "allow", "cwd")


@_frozen
class ServerConfig:
    """One stdio server. `source` is the mcp.json it came from."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    allow: tuple[str, ...] = ()
    cwd: str | None = None
    source: str = ""

    def frozen(self) -> dict[str, Any]:
        """For the spawn record: literal values of secret-named env vars are not
        copied (`{"$from": source}`), so they never reach a trail."""
        env: dict[str, Any] = {}
        for key, value in self.env.items():
            secret = _SECRET.search(key) and not _REF.fullmatch(value)
            env[key] = {"$from": self.source} if secret else value
        return {"name": self.name, "command": self.command, "args": list(self.args),
                "env": env, "allow": list(self.allow), "cwd": self.cwd, "source": self.source}

    @classmethod
    def thaw(cls, data: dict[str, Any]) -> ServerConfig:
        """Reverse `frozen()`; a `$from` value is re-read from its mcp.json."""
        env: dict[str, str] = {}
        for key, value in (data.get("env") or {}).items():
            if isinstance(value, dict) and "$from" in value:
                # re-read from its file: only while that file is still what was trusted
                configs, _ = _usable(Path(value["$from"]))
                origin = configs.get(data["name"])
                env[key] = origin.env.get(key, "") if origin else ""
            else:
                env[key] = str(value)
        return cls(name=data["name"], command=data["command"], args=tuple(data.get("args") or ()),
                   env=env, allow=tuple(data.get("allow") or ()), cwd=data.get("cwd"),
                   source=data.get("source", ""))

    def expanded_env(self) -> dict[str, str]:
        """env with `${VAR}` replaced from this process's environment ("" when unset)."""
        return {k: _REF.sub(lambda m: os.environ.get(m.group(1), ""), v) for k, v in self.env.items()}


def config_files(workspace: Path) -> list[Path]:
    """In load order: system `<config>/mcp.json`, workspace `<workspace>/.zapcli/mcp.json`."""
    return [config_dir() / "mcp.json", workspace / trust.MCP]


def _diag(name: str, message: str, scope: str = "file") -> dict[str, str]:
    """A problem of a whole mcp.json (`scope` "file", `name` its path) or of one
    server entry in it (`scope` "server", `name` the server's)."""
    return {"dimension": "mcp", "name": name, "message": message, "scope": scope}


def _server(name: str, raw: Any, source: str) -> tuple[ServerConfig | None, str | None]:
    if not isinstance(raw, dict):
        return None, "must be an object with `command`"
    unknown = [k for k in raw if k not in _SERVER_KEYS]
    if "url" in raw or raw.get("type") not in (None, "stdio"):
        return None, "only stdio servers (`command` + `args`) are supported"
    if unknown:
        return None, f"unknown key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(_SERVER_KEYS)}"
    command = raw.get("command")
    if not isinstance(command, str) or not command:
        return None, "needs `command` (the program that starts the server)"
    args, env, allow = raw.get("args", []), raw.get("env", {}), raw.get("allow", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None, "`args` must be a list of strings"
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        return None, "`env` must map names to string values"
    if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
        return None, "`allow` must be a list of tool names"
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        return None, "`cwd` must be a string"
    return ServerConfig(name, command, tuple(args), dict(env), tuple(allow), cwd, source), None


def _usable(path: Path) -> tuple[dict[str, ServerConfig], list[dict[str, str]]]:
    """An mcp.json as it may be used: the user's own as it is; a workspace's
    only in the bytes its trust covers (nothing when not trusted)."""
    own = trust.own_file(path)
    if own is None:
        return read_file(path)
    raw = trust.verdict(own[0]).read(own[1])
    return read_file(path, raw) if raw is not None else ({}, [])


def read_file(path: Path, raw: bytes | None = None
              ) -> tuple[dict[str, ServerConfig], list[dict[str, str]]]:
    """Servers in one mcp.json (none when the file does not exist) and its
    problems; `raw`: its bytes, read already."""
    try:
        raw = read_at_most(path, MAX_FILE_BYTES) if raw is None else raw[:MAX_FILE_BYTES + 1]
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        return {}, [_diag(str(path), f"{path}: cannot read: {exc.strerror or exc}")]
    if len(raw) > MAX_FILE_BYTES:
        return {}, [_diag(str(path), f"{path}: the file is larger than "
                          f"{larger_than(MAX_FILE_BYTES)}; nothing in it was loaded")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return {}, [_diag(str(path), f"{path}: cannot read: {exc}")]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, [_diag(str(path), f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}")]
    except RecursionError:  # the parser's own limit: said as for YAML, never a traceback
        return {}, [_diag(str(path), f"{path}: nested too deeply to be an MCP config (an mcp.json "
                          "is a short, flat file); nothing in it was loaded")]
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}, [_diag(str(path), f'{path}: expected {{"mcpServers": {{name: {{...}}}}}}')]
    out: dict[str, ServerConfig] = {}
    diags = []
    for name, raw in servers.items():
        config, problem = _server(str(name), raw, str(path))
        if config is None:
            diags.append(_diag(str(name), f"{path}: server '{name}' {problem}", "server"))
        else:
            out[str(name)] = config
    return out, diags


def load_servers(workspace: Path) -> tuple[dict[str, ServerConfig], list[dict[str, str]]]:
    """Every configured server (workspace overrides system by name) and the problems."""
    merged: dict[str, ServerConfig] = {}
    diags: list[dict[str, str]] = []
    for path in config_files(workspace):
        servers, problems = _usable(path)
        merged.update(servers)
        diags += problems
    return merged, diags


def missing_message(name: str, workspace: Path) -> str:
    """What to configure for a declared server that has no configuration."""
    user, own = config_files(workspace)
    if os.path.lexists(own) and not trust.allows(workspace, trust.MCP):
        return (f"server '{name}' is declared but not configured: {own} is not trusted, so no "
                f"server of it starts (zapcli trust {workspace} to use it, or configure "
                f"'{name}' in {user})")
    return (f"server '{name}' is declared but not configured; add it to {own} or {user}: "
            f'{{"mcpServers": {{"{name}": {{"command": "...", "args": [], "allow": []}}}}}}')
