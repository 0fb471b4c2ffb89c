"""`zapcli gc`: retention on demand (docs/explanation/rules.md#retention).

Imports `zapcli.lifecycle.retention`, which holds the rules (the runner and
`spawn` apply them opportunistically too), and `zapcli.lifecycle.worktrees`:
subagent worktrees are collected only here, on demand, and also while
subagents run (each tree's own users are checked). `zapcli.sandbox.placeholders`:
the placeholders (empty folders, files that configure nothing) a killed
sandbox left in a workspace are removed too. `zapcli.backends.sandboxed`:
the sandbox a tree's `worktree.teardown` runs in.
"""

from __future__ import annotations

from zapcli.config import Settings
from zapcli.lifecycle.retention import GcResult, collect


def gc(settings: Settings, *, dry_run: bool = False) -> GcResult:
    """Trim big trails and keep at most `max_kept` subagents, now; remove clean
    worktrees of finished subagents."""
    from zapcli.backends.sandboxed import tree_box
    from zapcli.lifecycle import worktrees
    from zapcli.paths import placeholders_dir
    from zapcli.sandbox.placeholders import sweep

    result = collect(settings, dry_run=dry_run)
    result.worktrees = worktrees.collect(dry_run=dry_run, boxes=tree_box)
    if not dry_run:
        result.placeholders = sweep(str(placeholders_dir()))
    return result
