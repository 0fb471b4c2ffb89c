"""`zapcli top`: the live fleet view on the terminal (the `zapcli[tui]`
extra). Imports `zapcli.tui` only once Textual is there and stdout is a
terminal: without Textual it says in one line how to install it (exit 2).
"""

from __future__ import annotations

import sys

from zapcli.cli.output import is_tty
from zapcli.errors import UsageError

INSTALL = ("zapcli: top needs Textual, the `tui` extra: pip install 'zapcli[tui]' "
           "(pipx: pipx install 'zapcli[tui]' --force)\n")
EXIT_MISSING = 2


def execute(all: bool = False, tree: bool = False, filter: str | None = None) -> int:
    try:
        import textual  # noqa: F401  (the extra's one dependency)
    except ImportError:
        sys.stderr.write(INSTALL)
        return EXIT_MISSING
    if not (is_tty() and is_tty(sys.stdin)):
        raise UsageError("top draws on a terminal and reads its keys; without one, use "
                         "zapcli list (--json) and approve, deny, kill, send")
    from zapcli.cli.settings import for_observers
    from zapcli.tui.app import TopApp

    TopApp(for_observers(), all_sessions=all, as_tree=tree, filter_text=filter or "").run()
    return 0
