"""Spawn-time resolution for agent-CLI backends, the parent side (docs/explanation/rules.md#agent-clis):
`Cli.prepare`.

Imports `zapcli.backends.clis.base` (types), `zapcli.backends.registry`,
`zapcli.definitions`, `zapcli.capabilities.mcpconfig` (no processes started,
no SDK imported). The CLI must be found (PATH or `backends.<name>.command`)
or the spawn is refused with what to install, before anything is created.
`--agent NAME` freezes the definition (prompt, model, tools) and its MCP
servers' configs into the spawn record, as for the built-in agent; what the
backend does not apply (its `restricts` leaves it out: skills, knowledge,
memory for the four CLIs) is a diagnostic.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.errors import ZapcliError

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.backends.base import SpawnInput
    from zapcli.backends.clis.base import Cli, Found

# what a definition may declare, as the backend's `restricts` names it
DIMENSIONS = {"skills": "skills", "knowledge": "knowledge sources", "memory": "memory",
              "mcp": "MCP servers", "tools": "tools", "prompt": "prompt",
              "team": "board and message tools (team: true)"}


def find_backend(backend: Cli, name: str, configured: dict[str, Any]) -> Found:
    """The program backend `name` runs. Raises ZapcliError (exit 1) saying
    what to install for a missing CLI."""
    from zapcli.backends.clis.base import NotInstalled

    try:
        return backend.find(name, configured.get(name))
    except NotInstalled as exc:
        raise ZapcliError(str(exc), code="backend_missing") from None


def _refuse_unusable(backend: Cli, found: Found, model: str | None, cwd: Path) -> None:
    """Refuse (exit 1, nothing created) what the backend knows cannot work,
    as a missing CLI is refused: opencode with no model, a CLI with no way
    to authenticate. The runner's environment is this process's; `cwd` is
    where the CLI will run (it looks for files such as .env from there)."""
    import os

    own = Path(found.command[0]).name == backend.binary
    why = backend.refusal(model, os.environ, str(cwd), own)
    if why is not None:
        raise ZapcliError(why, code="backend_unusable")


def _diag(dimension: str, name: str, message: str) -> dict[str, str]:
    return {"dimension": dimension, "name": name, "message": message}


def _definition(backend: Cli, spawn: SpawnInput
                ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, str]]]:
    """(fields, frozen MCP configs, diagnostics) for `--agent` on a CLI."""
    from zapcli.capabilities.mcpconfig import load_servers, missing_message
    from zapcli.definitions import discover, effective_model, resolve
    from zapcli.definitions.store import ReadOnce

    catalog = spawn.catalog or discover(spawn.workspace)
    switches = ReadOnce()
    d = resolve(spawn.agent, spawn.workspace, catalog=catalog, switches=switches)
    chosen = effective_model(spawn.model, d, switches.model_overrides(), None)
    diags = []
    declared = {"skills": d.skills, "knowledge": d.knowledge, "memory": d.memory != "none",
                "mcp": d.mcp_servers, "tools": d.tools, "prompt": d.prompt, "team": d.team}
    for key, what in DIMENSIONS.items():
        if declared.get(key) and key not in backend.restricts:
            diags.append(_diag(key, d.name, f"--cli {spawn.cli} does not apply the "
                               f"definition's {what}: it runs without them"))
    mcp = []
    if d.mcp_servers and "mcp" in backend.restricts:
        servers, _ = load_servers(spawn.workspace)
        for name in d.mcp_servers:
            if name in servers:
                mcp.append(servers[name].frozen())
            else:
                diags.append(_diag("mcp", name, missing_message(name, spawn.workspace)))
    fields: dict[str, Any] = {"agent": d.name, "model": chosen, "definition": d.to_dict()}
    if d.team and "team" in backend.restricts:  # zapcli's team MCP server in its config (docs/explanation/rules.md#fleets-traces-teams)
        fields.update(team=True, inbox=backend.inbox)
    return fields, mcp, diags


def spawn_fields(backend: Cli, spawn: SpawnInput) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The spawn record's fields for an agent CLI (`spawn.cli`: the backend's
    own name or a wrapper's), and warnings. Raises ZapcliError (nothing is
    created)."""
    from zapcli.backends.registry import configured

    found = find_backend(backend, spawn.cli, configured(spawn.settings))
    fields: dict[str, Any] = {"agent": None, "model": spawn.model, "definition": None}
    mcp: list[dict[str, Any]] = []
    diags: list[dict[str, str]] = []
    if spawn.agent:
        fields, mcp, diags = _definition(backend, spawn)
    _refuse_unusable(backend, found, fields["model"], spawn.cwd)
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
