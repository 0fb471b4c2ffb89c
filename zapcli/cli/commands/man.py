"""`zapcli man`: the man page the package carries — shown with `man -l`,
its path printed (`--path`), or copied where `man zapcli` finds it
(`--install`, `zapcli.cli.install`)."""

from __future__ import annotations

import os
import shutil
import sys

from zapcli.cli import install as where
from zapcli.cli.output import emit_json, emit_text, note


def execute(path: bool = False, install: bool = False, json: bool = False) -> int:
    if install:
        done = where.install_man()
        if json:
            emit_json(done.to_dict())
            return 0
        emit_text(f"{'installed' if done.changed else 'already current'}: {done.what} in {done.path}\n")
        note(done.note)
        return 0
    page = where.man_page()
    if json:
        emit_json({"path": str(page)})
        return 0
    viewer = shutil.which("man")
    if path or viewer is None:
        emit_text(f"{page}\n")
        if not path:
            note(f"no `man` program here: read it with `groff -man -Tutf8 {page} | less`")
        return 0
    sys.stdout.flush()
    import signal

    # Python ignores SIGPIPE, and an ignored signal stays ignored across exec: man's
    # col and grotty then said "write failed: Broken pipe" at `zapcli man | head`
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # at a terminal man's pager takes it over; into a pipe (`zapcli man | grep`) it writes the text
    os.execv(viewer, [viewer, "-l", str(page)])
