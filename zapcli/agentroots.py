"""The folders agent work was given to write in, and since when: what tells a
`trusted:` folder's plain subfolder the person made from one a subagent's
work may have made (`zapcli.trust.decide`). Imports only the standard
library and `zapcli.paths` (a spawn's hot path: no json, no re).

`note` runs as a subagent is created (its workspace and extra writable roots)
and as a `zapcli run` starts (its workspace), before any of its work runs;
`<config>/trust/agent-roots` keeps one line per folder, `path<TAB>since`, the
first time only, appended. `worked_above` is the check: a folder noted above
a workspace before its zapcli files last changed — by their change time,
which no one but root can set back — means work there could have made them.
Best effort to write (a config folder that cannot be written notes nothing;
inside a subagent's work, where it is hidden, its spawner noted them); a
damaged line is passed over.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from zapcli.paths import config_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

NAME = "agent-roots"
MAX_BYTES = 4 << 20


def _file() -> Path:
    return config_dir() / "trust" / NAME


def roots() -> dict[str, float]:
    """Each folder agent work was given to write in -> when it first was (epoch s)."""
    try:
        with open(_file(), "rb") as f:
            raw = f.read(MAX_BYTES)
    except OSError:
        return {}
    out: dict[str, float] = {}
    for line in raw.decode("utf-8", "surrogateescape").splitlines():
        path, _, since = line.rpartition("\t")
        try:
            when = float(since)
        except ValueError:
            continue
        if os.path.isabs(path) and path not in out:
            out[path] = when
    return out


def note(workspace: str, writable_roots: Iterable[str] = ()) -> None:
    """Note, before its work starts, the folders it is given to write in
    (relative writable roots are the workspace's, as the sandbox reads them)."""
    more = [os.path.expanduser(str(r)) for r in writable_roots]
    wanted = [os.path.realpath(p if os.path.isabs(p) else os.path.join(workspace, p))
              for p in (workspace, *more) if p]
    try:
        known = roots()
        new = [p for p in dict.fromkeys(wanted) if p not in known and "\n" not in p]
        if not new:
            return
        from zapcli.paths import make_dirs

        make_dirs(_file().parent)
        text = "".join(f"{p}\t{time.time():.3f}\n" for p in new)
        fd = os.open(_file(), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            os.write(fd, text.encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
    except OSError:
        pass


def worked_above(ws: Path, files: Iterable[Path]) -> Path | None:
    """The nearest folder above `ws` noted before any of `files` (a
    workspace's zapcli files, or the links to them) last changed; None when
    there is none. A file's own change time is enough: writing, linking or
    renaming it sets it (its folder's would change with the memory an agent
    keeps there too)."""
    above = [(Path(path), since) for path, since in roots().items() if Path(path) in ws.parents]
    if not above:
        return None
    changed = 0.0
    for path in files:
        for look in (os.lstat, os.stat):
            try:
                changed = max(changed, look(path).st_ctime)
            except OSError:
                pass
    found = [folder for folder, since in above if changed >= since]
    return max(found, key=lambda f: len(f.parts)) if found else None
