"""A subagent's reserved end, `<id>.end`: disk space taken when its runner
starts, so a disk that is full at exit never loses how it ended (#12.4).

Imports `zapcli.trail.store`, `zapcli.trail.jsonl`. The runner reserves `SLOT_BYTES` when it
starts (`reserve`, posix_fallocate: the blocks are allocated now). If its
terminal `status` cannot be appended to the trail at the end, it writes the
record's fields into the reserved bytes instead (`keep`: an overwrite in
place, which needs no new block) and exits. The observer that then finds the
runner dead without a terminal record appends the kept outcome (`kept`)
instead of `lost`, with the runner's own `ts` (when it ended, not when it
was recovered); once the trail holds a terminal status the slot is removed
(`release`). While the runner lives it touches the slot (`beat`), so a runner
that dies without a word still tells how long it ran.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.trail import jsonl, store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SLOT_BYTES = 8192
SUFFIX = ".end"
HEARTBEAT_S = 2.0  # the runner touches its slot this often (`beat`)


def _path(trail: Path) -> Path:
    return trail.with_suffix(SUFFIX)


def reserve(trail: Path) -> bool:
    """Create the slot next to `trail` with its space allocated. False when
    that is not possible (no space already, or no fallocate): the end then
    has only the trail's own retries."""
    try:
        fd = store.create_exclusive(_path(trail))
    except OSError:
        return False
    try:
        os.posix_fallocate(fd, 0, SLOT_BYTES)
        return True
    except (OSError, AttributeError):
        _path(trail).unlink(missing_ok=True)
        return False
    finally:
        os.close(fd)


def keep(trail: Path, fields: dict[str, Any]) -> bool:
    """Write the terminal `status` fields into the reserved slot (fsynced);
    a long reason is cut to fit. False when there is no slot."""
    fields = dict(fields)
    data = jsonl.dumps(fields)
    if len(data) >= SLOT_BYTES:
        fields["reason"] = str(fields.get("reason") or "")[: SLOT_BYTES // 2]
        data = jsonl.dumps(fields)[: SLOT_BYTES - 1]
    try:
        fd = os.open(_path(trail), os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if os.fstat(fd).st_size < len(data) + 1:
            return False
        os.pwrite(fd, data + b"\n", 0)
        os.fsync(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def kept(trail: Path) -> dict[str, Any] | None:
    """The terminal `status` fields a runner kept in its slot, if any."""
    try:
        data = store.read_bytes(_path(trail))
    except OSError:
        return None
    data = data.strip(b"\0 \n")
    if not data:
        return None
    try:
        fields = jsonl.loads(data)
    except ValueError:
        return None
    return fields if isinstance(fields, dict) and isinstance(fields.get("status"), str) else None


def beat(trail: Path) -> None:
    """The runner is alive now: the slot's modification time says so (a
    metadata write, no block). A runner that dies without its end leaves its
    last beat: how long it ran, within HEARTBEAT_S (`lifecycle.observe`)."""
    try:
        os.utime(_path(trail), follow_symlinks=False)
    except OSError:
        pass


def last_beat(trail: Path) -> float | None:
    """When the runner last said it was alive (epoch seconds), if it did."""
    try:
        return os.stat(_path(trail), follow_symlinks=False).st_mtime
    except OSError:
        return None


def release(trail: Path) -> None:
    """Remove the slot (the trail holds the terminal status now)."""
    try:
        _path(trail).unlink()
    except OSError:
        pass
