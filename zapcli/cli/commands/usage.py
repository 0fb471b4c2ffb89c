"""`zapcli usage`: token totals per subagent and per session (parent run)."""

from __future__ import annotations

from zapcli.cli.output import emit
from zapcli.ops.usage import usage
from zapcli.render import usage as render


def execute(run: str | None = None, all: bool = False, json: bool = False) -> int:
    emit(json, render.doc, render.lines, usage(all_sessions=all, session=_session_of(run, all)))
    return 0


def _session_of(run: str | None, all_sessions: bool) -> str | None:
    """The session `zapcli usage RUN` shows: the run's own (its id)."""
    if run is None:
        return None
    from zapcli.errors import NotFound, UsageError
    from zapcli.trail import runs

    if all_sessions:
        raise UsageError("give a run's id or --all, not both")
    if not runs.is_run_id(run):
        raise UsageError(f"{run!r} is not a run's id (run_…): usage shows a run, or with no id "
                         "this session; one subagent's tokens: zapcli poll ID")
    if not runs.exists(run):
        raise NotFound(runs.not_a_subagent(run))
    return run
