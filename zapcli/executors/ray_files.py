"""The pool's files in its node's Ray log folder: one frames file per
subagent and the status file (formats: `ray_wire`).

Imports the standard library, orjson and `zapcli.executors.ray_wire`; no
`ray`. The dispatcher (`ray_dispatch`) alone writes them; the caller reads
them through the dashboard (`GET /api/v0/logs/file`, `read_status_line`).
A dispatcher that replaces a dead one reads them back to continue where it
left off (frame numbers and node offsets per subagent).
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.executors import ray_wire as wire
from zapcli.trail import jsonl

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

STATUS_ROTATE_BYTES = 1 << 20  # past this the status file starts over (the last line is what counts)


class Frames:
    """Where one subagent's frames file stands: the next frame number and
    the node offsets shipped per stream (t, o, e)."""

    def __init__(self, path: Path):
        self.path = path
        self.n = 0
        self.offs = [0, 0, 0]
        self.ended: str | None = None

    def recover(self) -> Frames:
        """Read an existing file back (a replaced dispatcher's work)."""
        try:
            lines = self.path.read_text(encoding="ascii", errors="replace").splitlines()
        except OSError:
            return self
        for line in lines:
            got = wire.parse_frame(line)
            if got is None or got[0] != self.n:
                continue
            self.n += 1
            if got[1] == "end":
                self.ended = str(got[2])
            else:
                _, stream, offset, data = got  # type: ignore[misc]
                self.offs["toe".index(stream)] = offset + len(data)
        return self

    def add(self, chunks: dict[str, Any], end: str | None) -> None:
        """Append the streams' new bytes ({stream: [offset, data]}) and the end."""
        out = []
        for i, stream in enumerate("toe"):
            if stream in chunks:
                offset, data = chunks[stream]
                out.append(wire.frame(self.n, stream, offset, data))
                self.n += 1
                self.offs[i] = offset + len(data)
        if end is not None:
            out.append(wire.end_frame(self.n, end))
            self.n += 1
            self.ended = end
        if out:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with open(fd, "a", encoding="ascii") as f:
                f.write("".join(out))

    def remove(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass


class StatusFile:
    """Appends one status line per change; starts over past a size."""

    def __init__(self, path: Path):
        self.path = path
        self.seq = 0

    def write(self, doc: dict[str, Any]) -> None:
        self.seq += 1
        line = jsonl.dumps({**doc, "seq": self.seq}) + b"\n"
        try:
            big = self.path.stat().st_size > STATUS_ROTATE_BYTES
        except OSError:
            big = False
        if big:  # a whole new file in its place, never a torn one
            tmp = self.path.with_name(self.path.name + ".new")
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
                f.write(line)
            os.replace(tmp, self.path)
            return
        with open(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as f:
            f.write(line)


def read_status_line(text: str) -> dict[str, Any] | None:
    """The last complete status line of a tail of the status file."""
    for line in reversed(text.splitlines()):
        try:
            doc = jsonl.loads(line.encode())
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("v") == wire.PROTOCOL:
            return doc
    return None
