"""`zapcli doctor`: one line per check, each saying what to fix.

Imports `zapcli.config`, `zapcli.paths`, `zapcli.definitions`, `zapcli.capabilities`
(config of MCP servers) and, for the reachability check only, the openai SDK
through `zapcli.providers` — doctor is the one parent command allowed to pay
for that import.
"""

from __future__ import annotations

import os
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


def _model(settings) -> Check:
    if not settings.model:
        return Check("model", False, "no model configured: pass --model, set ZAPCLI_MODEL, or set "
                                     "`model:` in config.yaml")
    try:
        from zapcli.providers.resolve import build_client

        client = build_client(None, settings.model, settings.providers, os.environ, timeout_s=10,
                              max_retries=0)
        from openai import OpenAI

        raw = OpenAI(base_url=client.base_url, api_key=client._api_key or "x",
                     timeout=10, max_retries=0)
        models = [m.id for m in raw.models.list()]
        found = client.model in models or not models
        return Check("model", found, f"{client.model} at {raw.base_url}" + ("" if found else
                     f" — the server does not list it (it has: {', '.join(models[:5])})"))
    except Exception as exc:  # doctor reports every failure as a line
        return Check("model", False, f"{settings.model}: {getattr(exc, 'reason', None) or exc}")


def run_checks() -> list[Check]:
    from zapcli.config import load_settings
    from zapcli.paths import workspace_of

    checks: list[Check] = []
    workspace = workspace_of(Path.cwd())
    try:
        settings = load_settings(workspace)
        checks.append(Check("config", True, "config files are valid"))
    except ZapcliError as exc:
        return [Check("config", False, exc.message), _state()]
    checks.append(_state())
    from zapcli.definitions import discover

    catalog = discover(workspace)
    diags = catalog.diagnostics
    checks.append(Check("definitions", not diags, f"{len(catalog.names())} definitions"
                        + ("" if not diags else "; " + "; ".join(str(d) for d in diags[:5]))))
    from zapcli.capabilities.mcpconfig import load_servers

    servers, mcp_diags = load_servers(workspace)
    checks.append(Check("mcp servers", not mcp_diags, f"{len(servers)} configured"
                        + ("" if not mcp_diags else "; " + "; ".join(d['message'] for d in mcp_diags))))
    checks.append(_model(settings))
    return checks
