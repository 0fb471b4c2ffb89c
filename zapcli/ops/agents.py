"""`zapcli agents …`: the definitions with what this machine can grant them.

Imports `zapcli.definitions.manage`, `zapcli.backends.agent` and
`zapcli.backends.registry` (a `cli:` names a backend), `zapcli.trust` (what
the workspace's trust left out is said in one line). The
management itself (validation, layers, switches) lives in
`zapcli.definitions.manage`; this adds the grant's diagnostics that spawn
would warn about, so list and show say it before anything is spawned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli import trust
from zapcli.errors import UsageError, param


@dataclass
class AgentsList:
    listing: Any  # definitions.manage.ListResult
    grants: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    untrusted: dict[str, Any] | None = None  # what the workspace's trust left out (`_untrusted`)


@dataclass
class AgentShow:
    shown: Any  # definitions.manage.ShowResult
    grant_diagnostics: list[dict[str, str]] = field(default_factory=list)
    untrusted: dict[str, Any] | None = None


def _untrusted(verdict: Any) -> dict[str, Any] | None:
    """{notice, ignored: [{path, state}], workspace} when the workspace's trust
    left some of its own files out (its definitions among them), else None."""
    notice = verdict.notice()
    if notice is None:
        return None
    return {"notice": notice, "workspace": str(verdict.workspace),
            "ignored": [{"path": rel, "state": state} for rel, state in verdict.ignored()]}


def _problems(definition: Any, workspace: Path, settings: Any) -> list[dict[str, str]]:
    """What spawn would warn about (the grant's diagnostics), and a `cli:`
    that names no backend (spawn would refuse it)."""
    from zapcli.backends import registry
    from zapcli.backends.agent import grant_problems

    found = grant_problems(definition, workspace)
    cli = getattr(definition, "cli", None)
    if cli:
        known = registry.names(registry.configured(settings))
        if cli not in known:
            found.append({"dimension": "cli", "name": cli, "message": (
                f"`cli: {cli}` names no backend; spawn refuses it (backends: {', '.join(known)})")})
    return found


def _settings(workspace: Path) -> Any:
    from zapcli.backends.sections import OWNERS
    from zapcli.config import load_settings

    return load_settings(workspace, lenient=True, owners=OWNERS)


def list_agents(workspace: Path) -> AgentsList:
    from zapcli.definitions import discover
    from zapcli.definitions.manage import list_agents as listing

    with trust.Scope(workspace) as verdict:
        catalog = discover(workspace)
        settings = _settings(workspace)
        res = listing(workspace, session_default=settings.model, catalog=catalog)
        return AgentsList(res, {r.name: _problems(catalog.get(r.name), workspace, settings)
                                for r in res.rows if r.valid}, _untrusted(verdict))


def show_agent(name: str, workspace: Path) -> AgentShow:
    from zapcli.definitions.manage import show_agent as show

    with trust.Scope(workspace) as verdict:
        res = show(name, workspace)
        grants = [] if res.definition is None else _problems(res.definition, workspace,
                                                             _settings(workspace))
        return AgentShow(res, grants, _untrusted(verdict))


def set_model(name: str, model: str | None, clear: bool, workspace: Path) -> Any:
    from zapcli.definitions.manage import set_agent_model

    if clear and model:
        raise UsageError(f"give a MODEL or {param('clear')}, not both")
    if not clear and not model:
        raise UsageError(f"give the MODEL '{name}' should use (e.g. zapcli agents model {name} "
                         f"gpt-4o-mini), or {param('clear')} to drop its override")
    return set_agent_model(name, None if clear else model, workspace)


def save_text(text: str, scope: str, workspace: Path, *, replaces: str | None = None) -> Any:
    """`agents save` for YAML given as text (the parent agent's `subagents_save`):
    validated from memory by the CLI's own code path — the same diagnostics
    (quoted as `<yaml>:line:col`, under the definition's name), the same bytes
    on disk; `replaces` (a rename) removes the old name's file in the scope."""
    import re

    from zapcli.definitions.manage import SCOPES, save_agent_text

    if scope not in SCOPES:
        raise UsageError(f"unknown {param('scope')} '{scope}': choose system or workspace")
    if replaces is not None and (not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", replaces)
                                 or replaces.startswith(".")):
        raise UsageError(f"{param('replaces')} '{replaces}' is not a definition name")
    return save_agent_text(text, scope, workspace, replaces=replaces)


def fields_to_yaml(fields: dict[str, Any]) -> str:
    """A definition given as fields, as the YAML a person would write."""
    import yaml

    return yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, default_flow_style=False)


def layer_folders(workspace: Path) -> dict[str, str]:
    """Where each writable layer keeps its files (built-ins ship with zapcli)."""
    from zapcli.definitions.manage import scope_dir

    return {scope: str(scope_dir(scope, workspace)) for scope in ("system", "workspace")}
