"""Bringing a remote runner's trail and output home: frames in, files out.

Imports `zapcli.trail`, `zapcli.executors.base`, `zapcli.executors.ray_wire`,
`zapcli.redact`; never `ray`. The pool writes one frames file per subagent
(`ray_wire`: `<n> <t|o|e> <offset> <base64>`, last `<n> end <how>`); the
caller fetches only the frames past its cursor (`n` already home) and
`apply` merges them into this machine's state folder:

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

import os

from zapcli.executors import ray_wire as wire
from zapcli.executors.base import Collected
from zapcli.trail import jsonl, reader, store

SKIP_TYPES = frozenset({"spawn", "process"})
NODE_CLOCK = {"mono": "node_mono", "deadline_mono": "node_deadline_mono"}


class Frames:
    """The frames of one fetch that follow the cursor, without a gap."""

    def __init__(self, lines: list[str], have: int):
        self.chunks: dict[str, list[tuple[int, bytes]]] = {"t": [], "o": [], "e": []}
        self.ended = False
        self.next = have
        for got in sorted((f for f in map(wire.parse_frame, lines) if f is not None), key=lambda f: f[0]):
            if got[0] < self.next:
                continue
            if got[0] > self.next:
                break  # a gap (not fetched yet): the rest waits for the next fetch
            self.next += 1
            if len(got) == 3:
                self.ended = True
            else:
                self.chunks[got[1]].append((int(got[2]), bytes(got[3])))


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
    """The node trail's records in these frames (each frame holds whole records)."""
    out: list[dict] = []
    for _, data in chunks:
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = jsonl.loads(line)
            except ValueError:
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


def apply(sid: str, lines: list[str], have: int) -> tuple[Collected, int]:
    """Merge the frames in `lines` past the cursor `have` into the caller's
    files of `sid` (under its trail's lock: two observers collecting at once
    add each byte once). Returns what came home and the new cursor; raises
    OSError when it cannot be written (the cursor stays)."""
    frames = Frames(lines, have)
    path = store.path_for(sid)
    with store.locked(path):
        got = Collected(records=_import_trail(sid, frames.chunks["t"]),
                        out_bytes=_append_stream(sid, ".out", frames.chunks["o"]),
                        err_bytes=_append_stream(sid, ".err", frames.chunks["e"]),
                        ended=frames.ended)
        if frames.ended and not any(r.get("type") == "collected" for r in reader.read(path).records):
            # said with its last bytes, before the pool may forget it: an
            # observer a moment later finds nothing left to fetch and must
            # not be the one to say what came home
            store.append(path, "collected", {"complete": True, "reason": wire.RUNNER_ENDED})
    return got, frames.next
