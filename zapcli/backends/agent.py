"""The `zapcli` backend, the built-in agent: its facts and its spawn-time
half — the definition, model and grant, resolved in the parent before any
fork and frozen into the `spawn` record, so editing a YAML file later changes
nothing for a running subagent (docs/explanation/rules.md#the-trail, docs/explanation/rules.md#managing-definitions). Its run is
`zapcli.backends.agent_run`.

Imports `zapcli.backends.base`; `zapcli.definitions`, `zapcli.capabilities`,
`zapcli.tools.registry` (names only) when a spawn is resolved.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.backends.base import Backend, RunContext, SpawnInput

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.config import Settings
    from zapcli.trail.model import Outcome

NO_MODEL = ("no model configured: pass --model, set ZAPCLI_MODEL, set `model:` in "
            "config.yaml or in the definition, or `zapcli agents model NAME MODEL` (and "
            "OPENAI_BASE_URL / OPENAI_API_KEY for the endpoint)")


def resolve_agent(agent: str | None, model_flag: str | None, workspace: Path,
                  settings: Settings, catalog: Any = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(spawn-record fields, warnings). Raises ZapcliError for an unknown,
    invalid or disabled definition (nothing is created)."""
    from zapcli.capabilities.grant import build_grant
    from zapcli.definitions import discover, effective_model, resolve
    from zapcli.definitions.store import ReadOnce
    from zapcli.tools.registry import available_tools, search_provider

    catalog = catalog or discover(workspace)
    switches = ReadOnce()
    definition = resolve(agent, workspace, catalog=catalog, switches=switches)
    model = effective_model(model_flag, definition, switches.model_overrides(), settings.model)
    grant = build_grant(definition, workspace,
                        available_tools=available_tools(search_provider=search_provider()))
    if not model:  # spawn can tell already: refuse, nothing created (docs/explanation/rules.md#models)
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
            "provider": _endpoint(model, settings), "inbox": AgentBackend.inbox,
            "genai_provider": AgentBackend.genai_provider, **({"team": True} if grant.team else {})
            }, tuple(warnings)


def _endpoint(model: str, settings: Settings) -> str | None:
    """The endpoint its calls go to, as its client names it in a rate limit:
    the queue holds a session's next subagents for a provider that is
    rate-limiting several of them (docs/explanation/rules.md#budgets)."""
    import os

    from zapcli.agent.modelerror import ModelError
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


class AgentBackend(Backend):
    """`--cli zapcli`: the built-in agent, in the runner's own interpreter."""

    name = "zapcli"
    summary = "the built-in agent"
    approval_hook = True  # every tool call goes through zapcli's approvals
    genai_provider = "openai"  # an OpenAI-compatible Chat Completions endpoint
    sandbox_default = "auto"  # its bash and background jobs, where this machine can
    restricts = ("prompt", "model", "tools", "mcp", "skills", "knowledge", "memory", "team")
    in_process = True
    inbox = "before its next model call"

    def prepare(self, spawn: SpawnInput) -> tuple[dict[str, Any], tuple[str, ...]]:
        return resolve_agent(spawn.agent, spawn.model, spawn.workspace, spawn.settings,
                             spawn.catalog)

    def run(self, ctx: RunContext) -> Outcome:
        from zapcli.backends import agent_run

        return agent_run.run(ctx.sid, ctx.spawn, ctx.task, writer=ctx.writer, out=ctx.out,
                             deadline_mono=ctx.deadline_mono, terminated=ctx.terminated)
