"""The subagent's private scratch folder, `<state>/subagents/<id>.tmp/`
(C23): made before its work starts and given to all of it as `TMPDIR`
(and `TMP`, `TEMP`), so siblings never share a scratch folder.

Imports `zapcli.trail.store`. Removed with the subagent (`rm`, `clean`,
`gc`, retention: `zapcli.lifecycle.retention.delete_files`), not when it
ends, so what its work left there can still be looked at. The sandbox binds
this folder writable by its name.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.trail import store

NAMES = ("TMPDIR", "TMP", "TEMP")


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
        os.environ[name] = str(path)
    import tempfile

    tempfile.tempdir = None  # this process's own temporary files go there too
    return path
