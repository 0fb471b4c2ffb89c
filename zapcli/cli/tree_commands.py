"""The commands on a subagent's git work — `diff`, `merge`, `attempts`,
`pick` — of the typer application (declared beside `zapcli.cli.app`, which
imports this module after its own commands; their bodies are
`zapcli.cli.commands.<name>`)."""

from __future__ import annotations

from typing import Optional

import typer

from zapcli.cli.app import _run, app
from zapcli.cli.options import JSON


@app.command()
def diff(
    id: str = typer.Argument(..., help="Subagent id (of a --worktree or --attempts subagent).", metavar="ID"),
    stat: bool = typer.Option(False, "--stat", help="Files with their changed lines, and the totals.", metavar=""),
    name_only: bool = typer.Option(False, "--name-only", help="Only the names of the changed files.", metavar=""),
    json: bool = JSON,
) -> None:
    """Show a subagent's work against its base: committed and uncommitted (untracked files too).

    Stdout holds only what git diff's own option prints (the patch, the stat,
    the file names), for a pipe; the line saying what was compared (and "no
    changes") goes to stderr.
    """
    _run("diff", locals())


@app.command()
def merge(
    id: str = typer.Argument(..., help="A finished subagent's id.", metavar="ID"),
    squash: bool = typer.Option(False, "--squash", help="One commit on the checkout's branch instead of a merge.", metavar=""),
    rebase: bool = typer.Option(False, "--rebase", help="Replay its commits on the checkout's branch (in its tree), then fast-forward.", metavar=""),
    allow_control_files: bool = typer.Option(False, "--allow-control-files", help="Merge changes to control files (.zapcli/, .envrc, agent CLI settings...) without asking.", metavar=""),
    json: bool = JSON,
) -> None:
    """Merge a finished subagent's work into the current branch of the checkout it was spawned from.

    Its uncommitted work is committed on its branch first. Refused, changing
    nothing, when it would conflict or would touch uncommitted changes of the
    checkout (the files are named). A change to a control file (a file another
    program reads as configuration that runs commands) is asked about at a
    terminal, and refused elsewhere (--json, scripts) unless --allow-control-files.
    Work the branch already has (merged before) is no error: as git merge, it
    says so (up to date) and exits 0.
    """
    _run("merge", locals())


@app.command()
def attempts(
    id: str = typer.Argument(..., help="The id of any one of the attempts.", metavar="ID"),
    check: Optional[str] = typer.Option(None, "--check", help="A shell command run in each finished attempt's tree (e.g. 'make test'); its result is shown. It runs the tree's code, which an agent wrote, so it runs as a model's shell does: in the sandbox (writes only in that tree, no network) with no API keys in its environment. What it writes in the tree is removed once it has run: it judges the attempt, it is not part of it.", metavar="CMD"),
    json: bool = JSON,
) -> None:
    """Compare the attempts of spawn --attempts: status, diff stat, tokens, cost, check result.

    The --check command runs in each tree as a model's shell runs, since the
    code it runs there was written by an agent: sandboxed where this machine
    can (said when it cannot) and without your keys. To run something there
    with your own environment, run it yourself in the tree (zapcli worktree list
    shows where it is).
    """
    _run("attempts", locals())


@app.command()
def pick(
    id: str = typer.Argument(..., help="The attempt to keep.", metavar="ID"),
    squash: bool = typer.Option(False, "--squash", help="Merge it as one commit.", metavar=""),
    rebase: bool = typer.Option(False, "--rebase", help="Replay its commits on the checkout's branch.", metavar=""),
    allow_control_files: bool = typer.Option(False, "--allow-control-files", help="Merge changes to control files (.zapcli/, .envrc, agent CLI settings...) without asking.", metavar=""),
    force: bool = typer.Option(False, "--force", help="Pick it even though it did not complete (failed, timeout, cancelled, lost).", metavar=""),
    json: bool = JSON,
) -> None:
    """Keep one attempt: merge it (as zapcli merge), then remove the other attempts' trees.

    Only an attempt that completed is picked, unless --force: one that
    failed, timed out or was stopped may hold half its work, or none. A
    sibling still running is stopped; a sibling's work is committed on its
    branch before its tree goes, and that branch is kept (unless its work is
    exactly the picked one's: then it goes too). Changes to control files
    are asked about as zapcli merge asks.
    """
    _run("pick", locals())
