"""`zapcli doctor`: one line per check, each saying what to fix.

Imports `zapcli.config`, `zapcli.paths`, `zapcli.definitions`, `zapcli.capabilities`
(config of MCP servers); the model check is `zapcli.providers.probe`, imported
by the CLI command, the one parent command that pays for the openai SDK.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from zapcli.errors import ZapcliError


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def _state() -> Check:
    from zapcli.paths import ensure_dir, subagents_dir

    try:
        folder = ensure_dir(subagents_dir())
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
        return Check("state folder", True, str(folder))
    except (ZapcliError, OSError) as exc:
        return Check("state folder", False, getattr(exc, "message", str(exc)))


def run_checks() -> list[Check]:
    from zapcli.config import load_settings
    from zapcli.paths import workspace_of

    checks: list[Check] = []
    workspace = workspace_of(Path.cwd())
    try:
        settings = load_settings(workspace)
        checks.append(Check("config", not settings.notes, "config files are valid"
                            + "".join(f"; {n}" for n in settings.notes)))
    except ZapcliError as exc:
        return [Check("config", False, exc.message), _state()]
    checks.append(_state())
    from zapcli.definitions import discover

    catalog = discover(workspace)
    diags = catalog.diagnostics
    checks.append(Check("definitions", not diags, f"{len(catalog.names())} definitions"
                        + "".join(f"\n    {d.one_line()}" for d in diags)))
    from zapcli.capabilities.mcpconfig import load_servers

    servers, mcp_diags = load_servers(workspace)
    if servers:  # really start each one (briefly): a configured server may not run
        from zapcli.capabilities.mcp_gateway import McpGateway

        gateway = McpGateway(tuple(servers), servers, workspace, start_timeout=10.0)
        try:
            mcp_diags = [*mcp_diags, *gateway.start()]
        finally:
            gateway.close()
    problems = "".join(f"\n    {d['name']}: {d['message']}" for d in mcp_diags)
    checks.append(Check("mcp servers", not mcp_diags, f"{len(servers)} configured, "
                        f"{len(servers) - len({d['name'] for d in mcp_diags})} started" + problems))
    return checks
