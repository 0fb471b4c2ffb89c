"""Settings for the commands that watch or stop subagents (poll, wait, list, kill).

Imports `zapcli.config`, `zapcli.backends.sections` (the keys the seams own),
`zapcli.cli.output`. They load the config leniently:
a typo in config.yaml must never stand between a user and stopping a runaway
subagent. Each skipped layer is named once on stderr.
"""

from __future__ import annotations

from zapcli.backends.sections import OWNERS
from zapcli.cli.output import warn
from zapcli.config import Settings, load_settings


def for_observers() -> Settings:
    """The effective settings with invalid layers skipped (and warned about)."""
    settings = load_settings(lenient=True, owners=OWNERS)
    for problem in settings.problems:
        warn("this config was ignored (defaults used instead); fix it:\n  "
             + problem.replace("\n", "\n  "))
    return settings
