"""Spawn-time resolution, the parent side of each backend: for the built-in
agent its definition, model and grant; for `sh` a check that no agent option
was given.

Imports `zapcli.definitions`, `zapcli.capabilities`, `zapcli.tools.registry`
(names only). Everything is resolved in the parent before any fork and frozen
into the `spawn` record, so editing a YAML file later changes nothing for a
running subagent (SPEC §4, §8.3).
"""

from __future__ import annotations

from pathlib import Path

from zapcli.config import Settings

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

NO_MODEL = ("no model configured: pass --model, set ZAPCLI_MODEL, set `model:` in "
            "config.yaml or in the definition, or `zapcli agents model NAME MODEL` (and "
            "OPENAI_BASE_URL / OPENAI_API_KEY for the endpoint)")


def resolve_agent(agent: str | None, model_flag: str | None, workspace: Path,
                  settings: Settings, catalog: Any = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(spawn-record fields, warnings). Raises ZapcliError for an unknown,
    invalid or disabled definition (nothing is created)."""
    from zapcli.capabilities.grant import build_grant
    from zapcli.definitions import Switches, discover, effective_model, resolve
    from zapcli.tools.registry import available_tools, search_provider

    catalog = catalog or discover(workspace)
    switches = Switches()
    definition = resolve(agent, workspace, catalog=catalog, switches=switches)
    model = effective_model(model_flag, definition, switches.model_overrides(), settings.model)
    grant = build_grant(definition, workspace,
                        available_tools=available_tools(search_provider=search_provider()))
    if not model:  # spawn can tell already: refuse, nothing created (SPEC §7.1)
        from zapcli.errors import ZapcliError

        raise ZapcliError(NO_MODEL, code="no_model")
    warnings: list[str] = []
    entry = catalog.entry(definition.name)
    hidden = [e for e in catalog.shadowed(definition.name) if e.layer == "builtin"]
    if entry is not None and hidden:
        warnings.append(f"'{definition.name}' is the {entry.layer} definition {entry.file}, which "
                        f"replaces the built-in of that name (zapcli agents show {definition.name})")
    warnings += [f"{d['dimension']} {d['name']}: {d['message']}" for d in grant.diagnostics]
    return {"agent": definition.name, "model": model, "definition": definition.to_dict(),
            "grant": grant.to_dict(), "diagnostics": list(grant.diagnostics),
            "provider": _endpoint(model, settings)}, tuple(warnings)


def _endpoint(model: str, settings: Settings) -> str | None:
    """The endpoint its calls go to, as its client names it in a rate limit:
    the queue holds a session's next subagents for a provider that is
    rate-limiting several of them (SPEC §19)."""
    import os

    from zapcli.agent.types import ModelError
    from zapcli.providers.resolve import resolve_model

    try:
        return resolve_model(model, None, settings.providers, os.environ)[1] or "https://api.openai.com/v1"
    except ModelError:
        return None


def grant_problems(definition: Any, workspace: Path) -> list[dict[str, str]]:
    """What the definition declares but would not get on this machine (a tool
    with no provider, an unconfigured MCP server, a missing skill...): the
    grant's diagnostics, as spawn would warn them. Each is {dimension, name,
    message}. For `agents list|show` and `doctor`, before anything is spawned."""
    from zapcli.capabilities.grant import build_grant
    from zapcli.tools.registry import available_tools, search_provider

    return list(build_grant(definition, workspace, available_tools=available_tools(
        search_provider=search_provider())).diagnostics)


AGENT_ONLY = ("--agent, --model, --approval, --max-tokens and --unattended are for agents "
              "(zapcli and the agent CLIs), not a shell command; drop them for --cli sh")


def spawn_fields(cli: str, *, agent: str | None, model: str | None, approval: str | None,
                 unattended: bool, max_tokens: int | None, workspace: Path,
                 settings: Settings, cwd: Path | None = None,
                 catalog: Any = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The backend's fields of the `spawn` record and the warnings for the
    caller, resolved before anything is created (`cwd`: where the work runs,
    default the workspace). Raises ZapcliError."""
    if cli == "sh":
        from zapcli.errors import UsageError

        if agent or model or unattended or max_tokens or approval:
            raise UsageError(AGENT_ONLY)
        return {"agent": None, "model": None, "definition": None}, ()
    if cli != "zapcli":  # an agent CLI (SPEC §13)
        from zapcli.backends.cli_resolve import spawn_fields as cli_fields

        return cli_fields(cli, agent=agent, model=model, approval=approval, unattended=unattended,
                          max_tokens=max_tokens, workspace=workspace, settings=settings,
                          cwd=cwd or workspace, catalog=catalog)
    return resolve_agent(agent, model, workspace, settings, catalog)
