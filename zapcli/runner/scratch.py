"""The subagent's private scratch folder, `<state>/subagents/<id>.tmp/`
(C23): made before its work starts and given to all of it as `TMPDIR`
(and `TMP`, `TEMP`), so siblings never share a scratch folder.

Imports `zapcli.trail.store`. Removed when the subagent ends (`drop`, by
its runner), and by `rm`, `clean`, `gc` and retention
(`zapcli.lifecycle.retention.delete_files`) when a runner could not. In the
sandbox its commands see a capped tmpfs at this path instead (gone with the
sandbox: `zapcli.sandbox.policy.Policy.scratch_size`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zapcli.trail import store

NAMES = ("TMPDIR", "TMP", "TEMP")
_BEFORE: dict[str, str | None] = {}  # what they were before `make`


def make(sid: str) -> Path:
    """Create the folder (0700; one left by an earlier try is taken as it is)
    and point this process's environment, inherited by every backend's work,
    at it. Raises OSError when it cannot be made."""
    path = store.path_for(sid, store.TMP)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if path.is_symlink() or not path.is_dir():  # never follow a planted link
            raise OSError(f"{path} exists and is not a folder") from None
    for name in NAMES:
        _BEFORE.setdefault(name, os.environ.get(name))
        os.environ[name] = str(path)
    if "tempfile" in sys.modules:  # not imported yet: it reads TMPDIR when it is
        import tempfile

        tempfile.tempdir = None  # this process's own temporary files go there too
    return path


def drop(sid: str) -> None:
    """Remove the folder and everything in it (never following a link out),
    and give this process its temporary folder back."""
    for name, value in _BEFORE.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _BEFORE.clear()
    if "tempfile" in sys.modules:
        import tempfile

        tempfile.tempdir = None
    path = store.path_for(sid, store.TMP)
    if path.is_symlink():
        path.unlink(missing_ok=True)
        return
    try:
        os.rmdir(path)  # usually left empty: no shutil (and its compressors) to import
    except OSError:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
