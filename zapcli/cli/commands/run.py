"""`zapcli run`: the built-in agent in the foreground, or (`--subagent --id`)
the child form that `spawn` starts."""

from __future__ import annotations

from zapcli.errors import UsageError


def execute(task: str | None = None, subagent: bool = False, id: str | None = None,
            agent: str | None = None, model: str | None = None, max_tokens: int | None = None,
            approval: str | None = None, unattended: bool = False, timeout: float | None = None,
            max_cost: float | None = None, max_subagents: int | None = None,
            sandbox: bool = False, no_sandbox: bool = False, trust: bool = False,
            json: bool = False) -> int:
    if subagent:
        if not id:
            raise UsageError("run --subagent needs --id ID (it is started by `zapcli spawn`)")
        from zapcli.runner.main import main

        return main(id)
    from zapcli.cli.commands.spawn import sandbox_choice
    from zapcli.cli.foreground import run_foreground

    return run_foreground(task=task, agent=agent, model=model, max_tokens=max_tokens,
                          approval=approval, unattended=unattended, json=json, timeout=timeout,
                          max_cost=max_cost, max_subagents=max_subagents,
                          sandbox=sandbox_choice(sandbox, no_sandbox) or "auto", trust=trust)
