"""`zapcli session`: print the current session."""

from __future__ import annotations

import os

from zapcli.cli.output import emit_json, emit_text
from zapcli.lifecycle import session as sessions


def execute(json: bool = False) -> int:
    name = sessions.current()
    if json:
        emit_json({"session": name, "source": "ZAPCLI_SESSION" if os.environ.get("ZAPCLI_SESSION") else "terminal"})
    else:  # the bare name, for $(zapcli session)
        emit_text(name + "\n")
    return 0
