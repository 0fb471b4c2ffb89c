"""Trusting, and the records it writes in the user's config folder:
`<config>/trust/<key>.json`, one per trusted workspace (its path, when, and
each file's hash), written by `grant` (`zapcli trust`, `--trust`) and
`approve` (a definition the person approved saving); read by
`zapcli.trust.decide`. Imports the standard library, `zapcli.paths`,
`zapcli.locks`, `zapcli.boundedread`, `zapcli.trust`, `zapcli.errors`.

A record is private (0600 in a 0700 folder), written whole (temp file and
rename) under one lock, so two saves at once never lose each other's file.
A damaged record trusts nothing.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from zapcli import trust
from zapcli.boundedread import read_at_most
from zapcli.paths import SUBAGENT_MARKER, config_dir, write_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VERSION = 1
MAX_RECORD_BYTES = 4 << 20


def folder() -> Path:
    return config_dir() / "trust"


def path_for(workspace: Path | str) -> Path:
    import hashlib

    return folder() / (hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape"))
                       .hexdigest()[:32] + ".json")


def _load(path: Path) -> dict[str, Any] | None:
    try:
        raw = read_at_most(path, MAX_RECORD_BYTES)
        rec = json.loads(raw)
    except (OSError, ValueError):
        return None
    if not (isinstance(rec, dict) and isinstance(rec.get("path"), str)
            and isinstance(rec.get("files"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in rec["files"].items())):
        return None
    return rec


def read(workspace: Path | str) -> dict[str, Any] | None:
    """The record of `workspace` (an absolute, resolved path), or None."""
    rec = _load(path_for(workspace))
    return rec if rec is not None and rec["path"] == str(workspace) else None


def _lock() -> Any:
    from zapcli.locks import exclusive
    from zapcli.paths import make_dirs

    make_dirs(folder())
    return exclusive(folder() / ".lock", 10.0)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _write(workspace: Path | str, files: dict[str, str], how: str) -> dict[str, Any]:
    rec = {"version": VERSION, "path": str(workspace), "trusted_at": _now(), "by": how,
           "files": dict(sorted(files.items()))}
    write_private(path_for(workspace), (json.dumps(rec, indent=1) + "\n").encode())
    return rec


def replace(workspace: Path, files: dict[str, str], how: str) -> dict[str, Any]:
    """Trust exactly `files` (unit -> hash) of `workspace`. Raises OSError."""
    with _lock():
        return _write(workspace, files, how)


def add(workspace: Path, rel: str, digest: str, how: str) -> None:
    """Trust one more file (or its new content), keeping the rest. Raises OSError."""
    with _lock():
        rec = read(workspace)
        files = dict(rec["files"]) if rec else {}
        files[rel] = digest
        _write(workspace, files, how if rec is None else str(rec.get("by") or how))


def remove(workspace: Path | str) -> dict[str, Any] | None:
    """Forget `workspace`'s record; the record it had, or None. Raises OSError."""
    with _lock():
        rec = read(workspace)
        if rec is not None:
            path_for(workspace).unlink(missing_ok=True)
        return rec


def every() -> list[dict[str, Any]]:
    """Every record, by path (damaged files are left out)."""
    try:
        names = sorted(os.listdir(folder()))
    except OSError:
        return []
    found = [_load(folder() / n) for n in names if n.endswith(".json")]
    return sorted((r for r in found if r is not None), key=lambda r: r["path"])


def grant(workspace: Path | str, how: str = "zapcli trust") -> trust.Verdict:
    """Trust the workspace's own zapcli files as they are now: the new
    verdict (a file that cannot be read stays untrusted). Raises UsageError
    inside a subagent's work (a model never trusts a folder), OSError when
    the record cannot be written."""
    if os.environ.get(SUBAGENT_MARKER):
        from zapcli.errors import UsageError

        raise UsageError("trusting a folder is refused inside a subagent's work: only the person "
                         "does that, from their own shell (zapcli trust PATH)")
    ws = trust.real(workspace)
    now = trust.Verdict(ws, None, "config")  # everything, as it is now
    files = {rel: d for rel in now.units() if (d := now.digest(rel)) is not None}
    rec = replace(ws, files, how)
    return trust.Verdict(ws, files, "trusted", rec["trusted_at"])


def approve(workspace: Path | str, rel: str, data: bytes) -> bool:
    """A definition the person approved saving into the workspace (`zapcli
    agents save`, a run's `subagents_save`) is trusted by that approval:
    `data`, the bytes written, is recorded for `rel`, and a run holding its
    decision takes it too, so it can be spawned on the next turn. Inside a
    subagent's work nothing is recorded. False when nothing was recorded
    (spawn then says the file was ignored)."""
    if os.environ.get(SUBAGENT_MARKER):
        return False
    ws = trust.real(workspace)
    value = trust.digest_bytes(data)
    trust.hold_too(ws, rel, value)
    try:
        add(ws, rel, value, "an approved save")
    except OSError:
        return False
    return True
