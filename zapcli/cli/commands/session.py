"""`zapcli session`: print the current session."""

from __future__ import annotations

import os
import sys

from zapcli.cli.output import emit_json
from zapcli.ops import session as sessions


def execute(json: bool = False) -> int:
    name = sessions.current()
    if json:
        emit_json({"session": name, "source": "ZAPCLI_SESSION" if os.environ.get("ZAPCLI_SESSION") else "terminal"})
    else:
        sys.stdout.write(name + "\n")
    return 0
