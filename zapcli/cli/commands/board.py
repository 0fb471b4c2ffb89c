"""`zapcli board add|list|claim|done|release|show`: the session's task board.

Imports `zapcli.team` (the verbs and whose call it is) and `zapcli.render.board`.
On the fast path (`claim` is what a worker runs in a loop): no typer, no rich
on a pipe. In a pipe `add` and `claim` print only the task id, as `spawn`
prints only its id (`t=$(zapcli board claim)`); `claim` exits 3 when there
is nothing to claim (the reason on stderr).
"""

from __future__ import annotations

from zapcli.cli.output import emit, emit_text, is_tty, note
from zapcli.render import board as render
from zapcli.team import who, work

EXIT_NOTHING = 3  # `claim`: nothing to claim now, or nothing left


def _text(text: str) -> str:
    if text == "-":
        from zapcli.cli.output import text_from_stdin

        return text_from_stdin("the text")
    return text


def add(text: str, after: list[str] | None = None, label: str | None = None,
        needs: list[str] | None = None, json: bool = False) -> int:
    res = work.add(who.current(), _text(text), after=after, label=label, needs=needs)
    if json or is_tty():
        emit(json, render.changed_doc, render.changed_lines, res)
    else:
        emit_text(res.task.id + "\n")
    return 0


def list_(json: bool = False) -> int:
    emit(json, render.list_doc, render.list_lines, work.list_tasks(who.current()))
    return 0


def claim(task: str | None = None, wait: float = 0.0, json: bool = False) -> int:
    res = work.claim(who.current(), task, wait)
    if json or is_tty():
        emit(json, render.claim_doc, render.claim_lines, res)
    elif res.claim.task is not None:
        emit_text(res.claim.task.id + "\n")
    else:
        note(res.claim.why)
    return 0 if res.claim.task is not None else EXIT_NOTHING


def done(task: str | None = None, result: str | None = None, fence: int | None = None,
         json: bool = False) -> int:
    if result is None:
        from zapcli.errors import UsageError

        raise UsageError("give the task's result with --result TEXT (what was done or found: "
                         "the others read it)")
    emit(json, render.changed_doc, render.changed_lines,
         work.done(who.current(), task, _text(result), fence))
    return 0


def release(task: str | None = None, fence: int | None = None, json: bool = False) -> int:
    emit(json, render.changed_doc, render.changed_lines, work.release(who.current(), task, fence))
    return 0


def show(task: str, json: bool = False) -> int:
    emit(json, render.show_doc, render.show_lines, work.show(who.current(), task))
    return 0
