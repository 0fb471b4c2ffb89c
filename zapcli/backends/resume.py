"""`zapcli continue` for agent-CLI subagents (docs/explanation/rules.md#agent-clis, docs/explanation/rules.md#parallel-coding): is there a
session to resume, and where.

Imports `zapcli.lifecycle.observe`, `zapcli.backends.cli_home`, `zapcli.errors`.
A CLI subagent is continued through the CLI's own resume (`claude --resume`,
`codex exec resume`, `gemini --resume`, `opencode run --session`): the new
subagent's spawn record says `continue_of: <old id>` (what else carries over
is `zapcli.ops.continue_`'s to decide, as for every backend), and its runner
starts the CLI in a copy of the old config home (where the CLI keeps the
session) with the session id the old trail's `session` record holds. This
module only says whether that resume point exists: an agent CLI's
subagent, ended, with a recorded session id and its config home still there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zapcli.errors import UsageError, ZapcliError


@dataclass(frozen=True)
class ResumePoint:
    """What the runner needs: the CLI session and the tokens that session
    already reported (codex reports running totals of a session)."""

    old_id: str
    session_id: str
    usage: dict[str, int]


def _point(old_id: str) -> tuple[ResumePoint, Any]:
    from zapcli.backends.cli_home import home_of
    from zapcli.lifecycle.observe import load, observe

    view = observe(old_id)  # NotFound for an unknown id
    s = load(old_id)
    if s.spawn.backend is None:
        raise UsageError(f"{old_id} ran --cli {s.spawn.cli or 'zapcli'}, not an agent CLI: it has "
                         "no CLI session to resume")
    if not view.terminal:
        raise ZapcliError(f"{old_id} is still {view.status}; wait for it (zapcli wait {old_id}) "
                          "or stop it (zapcli kill) before continuing it")
    session_id = (s.cli_session or {}).get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise ZapcliError(f"{old_id} never reported a {s.spawn.cli} session id (it ended before "
                          "its CLI started a session): there is nothing to resume; spawn anew")
    if not home_of(old_id).is_dir():
        raise ZapcliError(f"{old_id}'s config home (where {s.spawn.cli} kept the session) was "
                          "removed: there is nothing to resume; spawn anew")
    prior = (s.cli_session or {}).get("resumed_usage") or {}
    usage = {"input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
             "cached_tokens": s.cached_tokens}
    if isinstance(prior, dict):
        usage = {k: v + int(prior.get(k) or 0) for k, v in usage.items()}
    return ResumePoint(old_id, session_id, usage), s


def check(old_id: str) -> ResumePoint:
    """The resume point of `old_id`, checked at `zapcli continue` time (the
    runner reads it again when it starts). Raises ZapcliError saying why it
    cannot be continued."""
    return _point(old_id)[0]


class CannotResume(Exception):
    """Raised in the runner when the old subagent can no longer be resumed."""


def point(old_id: str) -> ResumePoint:
    """The resume point of `old_id`, for the runner. Raises CannotResume."""
    try:
        return _point(old_id)[0]
    except ZapcliError as exc:
        raise CannotResume(f"cannot continue {old_id}: {exc.message}") from None
