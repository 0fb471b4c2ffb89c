"""`zapcli usage` and settlement (SPEC §9).

Imports `zapcli.ledger`, `zapcli.lifecycle`, `zapcli.lifecycle.session`. Collecting a
terminal subagent (poll, wait, usage, the parent's subagent tool) settles its
token totals into its parent run — its session — exactly once.
"""

from __future__ import annotations

from zapcli.errors import NotFound, StateError
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import observe
from zapcli.lifecycle.status import View

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.ledger import ParentTotals


def settle(view: View, *, strict: bool = False) -> bool:
    """Settle a terminal view with tokens; True if this call settled it.

    Observers (poll, wait) settle best effort: when the ledger cannot be
    written (a full disk) they go on, and a later collection settles it, still
    exactly once. With `strict` (`zapcli usage`) StateError is raised.
    """
    if not view.terminal or not (view.input_tokens or view.output_tokens or view.cached_tokens):
        return False
    from zapcli import ledger  # sqlite3 only when there are tokens to settle

    try:
        return ledger.settle(view.id, view.session, view.status,
                             ledger.Tokens(view.input_tokens, view.output_tokens, view.cached_tokens,
                                           view.cost_usd))
    except StateError:
        if strict:
            raise
        return False


def usage(*, all_sessions: bool = False) -> list[ParentTotals]:
    """Per-parent totals; this session only unless `all_sessions`. Settles this
    session's terminal subagents first (usage collects them)."""
    session = sessions.current()
    if all_sessions:
        from zapcli.ops.listing import _all_ids

        todo = _all_ids()
    else:
        todo = sessions.members(session)
    running: dict[str, list[int]] = {}  # session -> tokens of its subagents still running
    for sid in todo:
        try:
            view = observe(sid)
        except NotFound:
            continue
        if view.terminal:
            settle(view, strict=True)
        else:
            acc = running.setdefault(view.session, [0, 0, 0])
            for i, n in enumerate((view.input_tokens, view.output_tokens, view.cached_tokens)):
                acc[i] += n
    from zapcli import ledger  # sqlite3 only here

    out = ledger.totals(None if all_sessions else session)
    for p in out:
        if p.parent in running:
            p.running = ledger.Tokens(*running[p.parent])
    return out
