"""The trail of a foreground `zapcli run`: `<state>/runs/<run id>.jsonl`.

Imports `zapcli.paths`, `zapcli.trail.store`, `zapcli.trail.records`. The same
format as a subagent's trail (a `spawn` record marked `"run": true` first,
then what its agent did, then a terminal `status`), so the run is the root of
the tree its subagents form: traces, timelines and ATIF documents start there.
Run ids are `run_YYYYMMDD_xxxxxxxx`, validated before any path is built.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.errors import NotFound, StateError
from zapcli.paths import ensure_dir, state_dir
from zapcli.trail import records, store

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


def is_run_id(value: object) -> bool:
    return (isinstance(value, str) and len(value) == 21 and value.startswith("run_")
            and value[12] == "_" and value[4:12].isascii() and value[4:12].isdigit()
            and all(c in "0123456789abcdef" for c in value[13:]))


def runs_dir() -> Path:
    return state_dir() / "runs"


def path_for(run_id: str) -> Path:
    if not is_run_id(run_id):
        raise NotFound(f"{run_id!r} does not exist (not a run id)")
    return runs_dir() / f"{run_id}.jsonl"


def exists(run_id: str) -> bool:
    try:
        return path_for(run_id).is_file()
    except NotFound:
        return False


def not_a_subagent(run_id: str) -> str:
    """What a subagent's verb says of a run id: what it is and what shows it
    (or that no such run exists)."""
    if not exists(run_id):
        return f"{run_id} does not exist (no `zapcli run` of that id in {runs_dir()})"
    return (f"{run_id} is a `zapcli run`, not a subagent: `zapcli replay {run_id}` and "
            f"`zapcli export {run_id}` show it; its subagents are in session {run_id} "
            f"(ZAPCLI_SESSION={run_id} zapcli list)")


def create(run_id: str, fields: dict[str, Any], secrets: list[bytes]) -> Path:
    """Create the run's trail holding its fsynced `spawn` record. Raises StateError."""
    ensure_dir(runs_dir())
    path = path_for(run_id)
    line = records.encode(records.make("spawn", 0, {**fields, "run": True}), secrets)
    try:
        fd = store.create_exclusive(path)
    except OSError as exc:
        raise StateError(f"could not create the run's trail {path}: {exc.strerror or exc}") from None
    try:
        store.write_all(fd, line)
        os.fsync(fd)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise StateError(f"could not write the run's trail {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return path


def ids_on_disk() -> list[str]:
    try:
        return sorted(n[:-6] for n in os.listdir(runs_dir()) if n.endswith(".jsonl") and is_run_id(n[:-6]))
    except OSError:
        return []
