"""`zapcli gc`: retention on demand (SPEC §6.3).

Imports `zapcli.lifecycle.retention`, which holds the rules (the runner and
`spawn` apply them opportunistically too), and `zapcli.lifecycle.worktrees`:
subagent worktrees are collected only here, on demand, and also while
subagents run (each tree's own users are checked).
"""

from __future__ import annotations

from zapcli.config import Settings
from zapcli.lifecycle.retention import GcResult, collect


def gc(settings: Settings, *, dry_run: bool = False) -> GcResult:
    """Trim big trails and keep at most `max_kept` subagents, now; remove clean
    worktrees of finished subagents."""
    from zapcli.lifecycle import worktrees

    result = collect(settings, dry_run=dry_run)
    result.worktrees = worktrees.collect(dry_run=dry_run)
    return result
