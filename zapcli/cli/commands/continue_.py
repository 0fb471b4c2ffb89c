"""`zapcli continue`: a finished subagent goes on as a new one, with its conversation."""

from __future__ import annotations

from zapcli.cli.commands.spawn import print_spawned
from zapcli.cli.output import text_from_stdin
from zapcli.ops.continue_ import continue_


def execute(id: str, text: str, model: str | None = None, timeout: float | None = None,
            on_finish: str | None = None, json: bool = False) -> int:
    if text == "-":
        text = text_from_stdin("the follow-up")
    return print_spawned(continue_(id, text, model=model, timeout_s=timeout, on_finish=on_finish), json)
