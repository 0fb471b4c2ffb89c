"""Bringing a remote runner's trail and output home: frames in, files out.

Imports `zapcli.trail`, `zapcli.executors.base`, `zapcli.redact`; never `ray`. The node side
(`ray_node`) prints frames `ZAPCLI1 <stream> <offset> <base64>` in the job's
log; `parse` reads them back and `apply` merges them into this machine's
state folder:

- stdout / stderr (`o`, `e`): bytes at node offsets, appended where the local
  copy ends (the caller's copies are written only here, so offsets match);
- the trail (`t`): whole records. A node record is appended to the caller's
  trail with the caller's next `seq` and its own as `node_seq`, keeping its
  `ts`; its `mono` fields become `node_mono` / `node_deadline_mono` (another
  machine's clock). The highest `node_seq` already home is the cursor, so
  collecting twice (two observers at once) never duplicates a record. The
  node's `spawn` and `process` records are not imported (the caller has its
  own), nor records the node got from the caller (`from_caller`).
All of it under the trail's lock, so seqs stay unique with other appenders;
the records go in through `store.append_records` (masked with this
machine's secrets, within the size cap, all of them or none).
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass, field

import orjson

from zapcli.executors.base import Collected
from zapcli.trail import reader, store

FRAME = "ZAPCLI1"
SKIP_TYPES = frozenset({"spawn", "process"})
NODE_CLOCK = {"mono": "node_mono", "deadline_mono": "node_deadline_mono"}


@dataclass
class Frames:
    chunks: dict[str, list[tuple[int, bytes]]] = field(default_factory=lambda: {"t": [], "o": [], "e": []})
    ended: bool = False  # the node side printed its last frame (everything was shipped)
    exit_code: int | None = None


def parse(log: str) -> Frames:
    """Frames from a job log; other lines (Ray's own) are ignored, as are
    damaged frames (a log cut mid-line)."""
    frames = Frames()
    for line in log.splitlines():
        if not line.startswith(FRAME + " "):
            continue
        parts = line.split(" ")
        if len(parts) == 4 and parts[1] == "end":
            frames.ended = True
            frames.exit_code = int(parts[2]) if parts[2].lstrip("-").isdigit() else None
            continue
        if len(parts) != 4 or parts[1] not in frames.chunks or not parts[2].isdigit():
            continue
        try:
            data = base64.b64decode(parts[3], validate=True)
        except (binascii.Error, ValueError):
            continue
        frames.chunks[parts[1]].append((int(parts[2]), data))
    return frames


def _contiguous(chunks: list[tuple[int, bytes]], start: int) -> bytes:
    """The bytes from offset `start` on, as far as the chunks run without a gap."""
    out = b""
    have = start
    for off, data in sorted(chunks):
        if off <= have < off + len(data):
            out += data[have - off:]
            have = off + len(data)
    return out


def _append_stream(sid: str, suffix: str, chunks: list[tuple[int, bytes]]) -> int:
    """Append what the local copy lacks; return the bytes added."""
    path = store.path_for(sid, suffix)
    try:
        size = os.stat(path, follow_symlinks=False).st_size
    except FileNotFoundError:
        size = -1
    added = _contiguous(chunks, max(size, 0))
    if not added:
        return 0
    fd = store.create_exclusive(path) if size < 0 else store.open_append(path)
    try:
        store.write_all(fd, added)
    finally:
        os.close(fd)
    return len(added)


def _node_records(chunks: list[tuple[int, bytes]]) -> list[dict]:
    """The node trail's complete records, in order (a frame may end mid-record)."""
    buf = _contiguous(chunks, 0)
    out: list[dict] = []
    for line in buf[: buf.rfind(b"\n") + 1].split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("seq"), int):
            out.append(rec)
    return out


def _import_trail(sid: str, chunks: list[tuple[int, bytes]]) -> int:
    """Append the node records not home yet (after the `node_seq` cursor);
    the store numbers, masks and writes them (all or none)."""
    from zapcli.redact import secret_values

    path = store.path_for(sid)
    node = _node_records(chunks)
    if not node:
        return 0
    with store.locked(path):
        local = reader.read(path).records
        cursor = max((r["node_seq"] for r in local if isinstance(r.get("node_seq"), int)), default=-1)
        new = []
        for rec in node:
            if rec["seq"] <= cursor or rec.get("type") in SKIP_TYPES or rec.get("from_caller"):
                continue
            cursor = rec["seq"]
            new.append({**{NODE_CLOCK.get(k, k): v for k, v in rec.items()}, "node_seq": rec["seq"]})
        return store.append_records(path, new, secrets=secret_values())


def apply(sid: str, frames: Frames) -> Collected:
    """Merge `frames` into the caller's files of `sid` (under its trail's lock:
    two observers collecting at once add each byte once)."""
    with store.locked(store.path_for(sid)):
        return Collected(records=_import_trail(sid, frames.chunks["t"]),
                         out_bytes=_append_stream(sid, ".out", frames.chunks["o"]),
                         err_bytes=_append_stream(sid, ".err", frames.chunks["e"]),
                         ended=frames.ended)
