"""`zapcli continue`: a finished subagent goes on as a new one, with its conversation."""

from __future__ import annotations

import sys

from zapcli.cli.commands.spawn import print_spawned
from zapcli.ops.continue_ import continue_
from zapcli.ops.tasktext import MAX_TASK_BYTES, decode_task


def execute(id: str, text: str, model: str | None = None, timeout: float | None = None,
            on_finish: str | None = None, json: bool = False) -> int:
    if text == "-":
        text = decode_task(sys.stdin.buffer.read(MAX_TASK_BYTES + 1))
    return print_spawned(continue_(id, text, model=model, timeout_s=timeout, on_finish=on_finish), json)
