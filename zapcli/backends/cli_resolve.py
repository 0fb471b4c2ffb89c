"""Spawn-time resolution for agent-CLI backends, the parent side (SPEC §13).

Imports `zapcli.backends.clis.registry`, `zapcli.definitions`,
`zapcli.capabilities.mcpconfig` (no processes started, no SDK imported). The
CLI must be found (PATH or `backends.<name>.command`) or the spawn is refused
with what to install, before anything is created. `--agent NAME` freezes
the definition (prompt, model, tools) and its MCP servers' configs into the
spawn record, as for the built-in agent; what only the built-in agent has
(skills, knowledge, memory) is a diagnostic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zapcli.config import Settings
from zapcli.errors import UsageError, ZapcliError, param

ZAPCLI_ONLY = {"skills": "skills", "knowledge": "knowledge sources", "memory": "memory"}


def find_backend(cli: str, settings: Settings) -> Any:
    """The resolved backend (`registry.Found`). Raises UsageError for an unknown
    name and ZapcliError (exit 1) saying what to install for a missing CLI."""
    from zapcli.backends.clis import registry

    try:
        return registry.find(cli, settings.backends)
    except KeyError:
        known = ", ".join(("zapcli", "sh", *registry.names(settings.backends)))
        raise UsageError(f"unknown backend '{cli}' for {param('cli')}; choose one of: {known} "
                         "(or define it under `backends:` in config.yaml)") from None
    except registry.NotInstalled as exc:
        raise ZapcliError(str(exc), code="backend_missing") from None


def _refuse_unusable(found: Any, model: str | None, cwd: Path) -> None:
    """Refuse (exit 1, nothing created) what the adapter knows cannot work,
    as a missing CLI is refused: opencode with no model, a CLI with no way
    to authenticate. The runner's environment is this process's; `cwd` is
    where the CLI will run (it looks for files such as .env from there)."""
    import os

    from zapcli.backends.clis import registry

    adapter = registry.adapter(found.kind)
    own = Path(found.command[0]).name == adapter.binary
    why = adapter.refusal(model, os.environ, str(cwd), own)
    if why is not None:
        raise ZapcliError(why, code="backend_unusable")


def _diag(dimension: str, name: str, message: str) -> dict[str, str]:
    return {"dimension": dimension, "name": name, "message": message}


def _definition(agent: str, model: str | None, cli: str, workspace: Path, catalog: Any = None
                ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, str]]]:
    """(fields, frozen MCP configs, diagnostics) for `--agent` on a CLI."""
    from zapcli.capabilities.mcpconfig import load_servers, missing_message
    from zapcli.definitions import Switches, discover, effective_model, resolve

    catalog = catalog or discover(workspace)
    switches = Switches()
    d = resolve(agent, workspace, catalog=catalog, switches=switches)
    chosen = effective_model(model, d, switches.model_overrides(), None)
    diags = []
    for key, what in ZAPCLI_ONLY.items():
        value = getattr(d, key, None)
        if value and value != "none":
            diags.append(_diag(key, d.name, f"the definition's {what} are zapcli's own; "
                               f"--cli {cli} does not get them"))
    mcp = []
    if d.mcp_servers:
        servers, _ = load_servers(workspace)
        for name in d.mcp_servers:
            if name in servers:
                mcp.append(servers[name].frozen())
            else:
                diags.append(_diag("mcp", name, missing_message(name, workspace)))
    return ({"agent": d.name, "model": chosen, "definition": d.to_dict()}, mcp, diags)


def spawn_fields(cli: str, *, agent: str | None, model: str | None, approval: str | None,
                 unattended: bool, max_tokens: int | None, workspace: Path,
                 settings: Settings, cwd: Path | None = None,
                 catalog: Any = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The spawn record's fields for an agent CLI, and warnings. Raises
    ZapcliError (nothing is created). `catalog`: the definitions, when the
    caller has already discovered them."""
    found = find_backend(cli, settings)
    fields: dict[str, Any] = {"agent": None, "model": model, "definition": None}
    mcp: list[dict[str, Any]] = []
    diags: list[dict[str, str]] = []
    if agent:
        fields, mcp, diags = _definition(agent, model, cli, workspace, catalog)
    _refuse_unusable(found, fields["model"], cwd or workspace)
    fields["backend"] = {**found.frozen(), "mcp": mcp}
    fields["diagnostics"] = diags
    return fields, tuple(f"{d['dimension']} {d['name']}: {d['message']}" for d in diags)


def definition_cli(agent: str | None, workspace: Path, catalog: Any = None) -> str | None:
    """The backend a definition names (`cli:`), without loading more than the
    catalog; None when it names none or cannot be read (spawn reports that)."""
    if not agent:
        return None
    from zapcli.definitions import discover

    try:
        catalog = catalog or discover(workspace)
        entry = catalog.entry(agent)
        d = getattr(entry, "definition", None) if entry is not None else None
    except ZapcliError:
        return None
    return getattr(d, "cli", None)
