"""`zapcli session`: print the current session and what it is derived from."""

from __future__ import annotations

from zapcli.cli.output import emit_json, emit_text, note
from zapcli.lifecycle import session as sessions


def execute(json: bool = False) -> int:
    name = sessions.current()
    source, derived = sessions.describe()
    if json:
        from zapcli.render.docschema import stamp

        emit_json(stamp("session", {"session": name, "source": source, "derived_from": derived}))
        return 0
    emit_text(name + "\n")  # the bare name on stdout, for $(zapcli session)
    if source == "process session":  # a `tty-` name with no terminal: say where it comes from
        note(f"{name} is named after {derived}")
    return 0
