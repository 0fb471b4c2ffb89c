"""The `board` and `message` tools as the built-in agent's tools (docs/explanation/rules.md#fleets-traces-teams):
`zapcli.team.tools` behind the agent's tool interface.

Imports `zapcli.agent.types`, `zapcli.team.tools`. Built for one caller (the
subagent, or the `zapcli run`, whose definition declares `team: true`) by
whoever builds its agent (`zapcli.backends.agent_run`, the run's own
foreground); messages reach the built-in agent before its next model call,
so its answers carry none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.team import tools
from zapcli.team.who import Caller, of_run


class TeamTool:
    def __init__(self, spec: ToolSpec, caller: Caller, waiting: Callable[[], int] | None = None):
        self.spec = spec
        self.caller = caller
        self.waiting = waiting

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ok, text = tools.answer(self.caller, self.spec.name, args, waiting=self.waiting)
        return ToolResult(ok, text)


def team_tools(caller: Caller, waiting: Callable[[], int] | None = None) -> list[TeamTool]:
    """`waiting`: how many messages sent to it its agent has not been handed
    yet (its inbox, which hands them over before its next model call)."""
    return [TeamTool(ToolSpec(tools.BOARD, tools.BOARD_DESCRIPTION, tools.BOARD_SCHEMA), caller),
            TeamTool(ToolSpec(tools.MESSAGE, tools.MESSAGE_DESCRIPTION, tools.MESSAGE_SCHEMA),
                     caller, waiting)]


def for_run(run_id: str, grant: dict[str, Any] | None) -> list[TeamTool]:
    """A `zapcli run`'s own board and message tools, when its definition declares
    `team: true` (none otherwise): its session is its run id, its claims its own."""
    return team_tools(of_run(run_id)) if (grant or {}).get("team") else []
