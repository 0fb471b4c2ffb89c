"""`zapcli gc`: retention on demand (SPEC §6.3).

Imports `zapcli.lifecycle.retention`, which holds the rules (the runner and
`spawn` apply them opportunistically too).
"""

from __future__ import annotations

from zapcli.config import Settings
from zapcli.lifecycle.retention import GcResult, collect


def gc(settings: Settings, *, dry_run: bool = False) -> GcResult:
    """Trim big trails and keep at most `max_kept` subagents, now."""
    return collect(settings, dry_run=dry_run)
