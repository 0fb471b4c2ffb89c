"""`build_host` turns resolved spawn fields into a runnable `AgentHost`.

Imports `zapcli.agent`, `zapcli.providers`, `zapcli.tools`,
`zapcli.capabilities`, `zapcli.definitions` (lazily: only a process that
runs an agent pays for them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zapcli.agent.types import Approver, Hooks, Limits, ModelClient, Sink, ToolContext


@dataclass
class AgentHost:
    """A built agent: run it once with a sink and hooks, then `close()` (stops
    its background jobs and MCP servers). `diagnostics` are what the grant
    declared but this machine could not give, for the caller to record."""

    client: ModelClient
    system_prompt: str
    tools: list[Any]
    ctx: ToolContext
    max_turns: int
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def run(self, task: str, sink: Sink, *, hooks: Hooks, max_tokens: int | None = None,
            should_stop: Callable[[], str | tuple[str, str] | None] | None = None,
            history: list[dict[str, Any]] | None = None,
            budget: Callable[[int], tuple[str, str] | None] | None = None) -> Any:
        """Run the loop to its end; returns its `LoopResult`. Tool results are
        masked with this process's secret values before the model sees them;
        `history`: the conversation a continued subagent carries on; `budget`:
        the check before each model call (`zapcli.budget.meter.Meter.check`)."""
        from dataclasses import replace

        from zapcli.agent.loop import run_loop
        from zapcli.redact import mask_text, secret_values

        secrets = secret_values()
        if hooks.redact is None and secrets:
            hooks = replace(hooks, redact=lambda text: mask_text(text, secrets))

        limits = Limits(max_turns=self.max_turns, max_tokens=max_tokens, should_stop=should_stop,
                        budget=budget)
        return run_loop(system_prompt=self.system_prompt, task=task, client=self.client,
                        tools=self.tools, sink=sink, ctx=self.ctx, limits=limits, hooks=hooks,
                        history=history)

    def close(self) -> None:
        for close in self._closers:
            close()


def file_view(workspace: str, writable_roots: tuple[str, ...], sandbox: Any = None) -> Any:
    """What the file tools may open: the roots agent work writes (the
    workspace, `writable_roots`, the scratch folder), zapcli's own folders
    hidden as the sandbox hides them from commands (`zapcli.beneath`) — but
    the subagent's own tree among its trees (`zapcli.paths.own_tree`)."""
    from zapcli.beneath import View
    from zapcli.paths import control_roots, own_tree

    policy = getattr(sandbox, "policy", None)
    scratch = getattr(policy, "scratch", "") or os.environ.get("TMPDIR", "")
    hidden = control_roots()
    if not any(os.path.commonpath([os.path.realpath(scratch), os.path.realpath(h)]) ==
               os.path.realpath(h) for h in hidden if scratch):
        scratch = ""  # not zapcli's scratch folder (a plain /tmp): no root of the agent's
    return View((workspace, *writable_roots, scratch), hidden, (scratch, own_tree(workspace) or ""))


def build_host(fields: Mapping[str, Any], *, workspace: str, cwd: str,
               writable_roots: tuple[str, ...], providers: Mapping[str, Any],
               approver: Approver, extra_tools: tuple[Any, ...] = (),
               deadline_mono: float | None = None,
               on_http_error: Callable[[int, str], None] | None = None,
               sandbox: Any = None) -> AgentHost:
    """Build the agent of `fields` (the `spawn` record's model, definition and
    grant). `sandbox` (`zapcli.host.sandbox.open_sandbox`): where its commands
    run; the host closes it last. Raises ModelError when no model client can
    be made."""
    from zapcli.capabilities.grant import Grant, open_tools
    from zapcli.capabilities.prompt import assemble_prompt
    from zapcli.definitions import Definition
    from zapcli.providers.resolve import build_client
    from zapcli.tools.env import scrubbed_env
    from zapcli.tools.registry import Toolset, search_provider

    client = build_client(fields.get("model"), None, providers, os.environ)
    if on_http_error is not None:
        client.on_http_error = on_http_error  # type: ignore[attr-defined]
    definition = Definition.from_dict(fields.get("definition") or {})
    grant = Grant.from_dict(fields.get("grant") or {})
    toolset = Toolset(grant.tools, search_provider=search_provider())
    caps = open_tools(grant, approver=approver)
    # The model's key never reaches a command, whatever the definition lists.
    env = scrubbed_env(os.environ, definition.env, deny_names=(getattr(client, "api_key_env", ""),))
    ctx = ToolContext(workspace=workspace, cwd=cwd, env=env, writable_roots=writable_roots,
                      deadline_monotonic=deadline_mono, sandbox=sandbox,
                      view=file_view(workspace, writable_roots, sandbox))
    return AgentHost(client=client, system_prompt=assemble_prompt(definition, grant),
                     tools=[*toolset.tools, *caps.tools, *extra_tools], ctx=ctx,
                     max_turns=definition.max_turns,
                     diagnostics=[*(fields.get("diagnostics") or []), *caps.diagnostics],
                     _closers=[toolset.close, caps.close,
                               *([sandbox.close] if sandbox is not None else [])])
