"""The typer group `zapcli board …` (docs/explanation/rules.md#fleets-traces-teams), which `zapcli.cli.app`
registers on its app; each body hands its parameters to
`zapcli.cli.commands.board`, which the fast path calls too.

Imports typer and `zapcli.cli.options`.
"""

from __future__ import annotations

from typing import Optional

import typer

from zapcli.cli.options import JSON

board_app = typer.Typer(
    help="The session's task board: subagents (and you) add tasks, claim them one at a time, "
         "and mark them done with a result. A claim whose holder ends without `done` goes "
         "back to open; a claim carries a fencing number, and `done` or `release` under a "
         "number that is no longer current is refused. A labelled task goes only to a subagent "
         "whose definition serves the label (board: {labels: [...]}), one that needs tools only "
         "to a subagent that has them.", no_args_is_help=True)

_TASK = typer.Argument(None, help="Task id (t3).", metavar="TASK")
_FENCE = typer.Option(None, "--fence", help="The fencing number your claim was handed (claim --json): refused if the task was claimed again since.", metavar="N")


def _board(fn: str, **params) -> None:
    from zapcli.cli.commands import board

    raise typer.Exit(getattr(board, fn)(**params))


@board_app.command("add")
def board_add(
    text: str = typer.Argument(..., help="What to do (`-` reads it from stdin).", metavar="TEXT"),
    after: Optional[list[str]] = typer.Option(None, "--after", help="A task that must be done first (repeatable).", metavar="TASK"),
    label: Optional[str] = typer.Option(None, "--label", help="Only a subagent whose definition serves L (board: {labels: [L]}) can claim it; you can.", metavar="L"),
    needs: Optional[list[str]] = typer.Option(None, "--needs", help="A tool a claimer must have, e.g. write (repeatable).", metavar="TOOL"),
    json: bool = JSON,
) -> None:
    """Put a task on the board; prints its id (in a pipe, only the id)."""
    _board("add", text=text, after=after, label=label, needs=needs, json=json)


@board_app.command("list")
def board_list(json: bool = JSON) -> None:
    """Every task: open, claimed (by whom), done (with its result)."""
    _board("list_", json=json)


@board_app.command("claim")
def board_claim(
    task: Optional[str] = _TASK,
    wait: float = typer.Option(0.0, "--wait", help="Wait up to SECS for a task to become claimable (on an empty board: for the first one to be added; a board whose tasks are all done answers at once).", metavar="SECS"),
    json: bool = JSON,
) -> None:
    """Claim TASK, or the next open task you can take whose --after tasks are done (exit 3: nothing to claim). --json gives the claim's fencing number."""
    _board("claim", task=task, wait=wait, json=json)


@board_app.command("done")
def board_done(
    task: Optional[str] = _TASK,
    result: Optional[str] = typer.Option(None, "--result", help="What was done or found (required; `-` reads it from stdin).", metavar="TEXT"),
    fence: Optional[int] = _FENCE,
    json: bool = JSON,
) -> None:
    """Mark a task you hold done, with its result (TASK: the one you hold)."""
    _board("done", task=task, result=result, fence=fence, json=json)


@board_app.command("release")
def board_release(task: Optional[str] = _TASK, fence: Optional[int] = _FENCE,
                  json: bool = JSON) -> None:
    """Put a claimed task back to open (a subagent: its own; you: any)."""
    _board("release", task=task, fence=fence, json=json)


@board_app.command("show")
def board_show(
    task: str = typer.Argument(..., help="Task id (t3).", metavar="TASK"),
    json: bool = JSON,
) -> None:
    """One task in full: text, dependencies, holder, result, and its history."""
    _board("show", task=task, json=json)
