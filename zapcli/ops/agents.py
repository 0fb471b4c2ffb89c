"""`zapcli agents …`: the definitions with what this machine can grant them.

Imports `zapcli.definitions.manage` and `zapcli.backends.resolve`. The
management itself (validation, layers, switches) lives in
`zapcli.definitions.manage`; this adds the grant's diagnostics that spawn
would warn about, so list and show say it before anything is spawned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zapcli.errors import UsageError, param


@dataclass
class AgentsList:
    listing: Any  # definitions.manage.ListResult
    grants: dict[str, list[dict[str, str]]] = field(default_factory=dict)


@dataclass
class AgentShow:
    shown: Any  # definitions.manage.ShowResult
    grant_diagnostics: list[dict[str, str]] = field(default_factory=list)


def list_agents(workspace: Path) -> AgentsList:
    from zapcli.backends.resolve import grant_problems
    from zapcli.config import load_settings
    from zapcli.definitions import discover
    from zapcli.definitions.manage import list_agents as listing

    catalog = discover(workspace)
    res = listing(workspace, session_default=load_settings(workspace, lenient=True).model,
                  catalog=catalog)
    return AgentsList(res, {r.name: grant_problems(catalog.get(r.name), workspace)
                            for r in res.rows if r.valid})


def show_agent(name: str, workspace: Path) -> AgentShow:
    from zapcli.backends.resolve import grant_problems
    from zapcli.definitions.manage import show_agent as show

    res = show(name, workspace)
    grants = grant_problems(res.definition, workspace) if res.definition is not None else []
    return AgentShow(res, grants)


def set_model(name: str, model: str | None, clear: bool, workspace: Path) -> Any:
    from zapcli.definitions.manage import set_agent_model

    if clear and model:
        raise UsageError(f"give a MODEL or {param('clear')}, not both")
    if not clear and not model:
        raise UsageError(f"give the MODEL '{name}' should use (e.g. zapcli agents model {name} "
                         f"gpt-4o-mini), or {param('clear')} to drop its override")
    return set_agent_model(name, None if clear else model, workspace)
