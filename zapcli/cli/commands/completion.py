"""`zapcli completion show|install`: the packaged completion scripts, printed
or put where the shell finds them (`zapcli.cli.install`)."""

from __future__ import annotations

from zapcli.cli import install as where
from zapcli.cli.output import emit_json, emit_text, note


def show(shell: str) -> int:
    emit_text(where.script(shell))
    return 0


def install(shell: str | None = None, no_rc: bool = False, json: bool = False) -> int:
    done = where.install_completion(shell or where.default_shell(), edit_rc=not no_rc)
    if json:
        emit_json(done.to_dict())
        return 0
    emit_text(f"{'installed' if done.changed else 'already current'}: {done.what} in {done.path}\n")
    if done.add_lines:
        emit_text("".join(f"{line}\n" for line in done.add_lines))
    if done.rc_file:
        emit_text(f"added to {done.rc_file}: that folder on fpath, and compinit\n")
    note(done.note)
    return 0
