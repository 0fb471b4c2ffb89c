"""The victim of bench_crash.py: a TrailWriter fed like a model stream until killed.

Usage (from bench_crash.py): python _crash_writer.py SHM_PATH SID   (ZAPCLI_HOME set)

Creates the trail as spawn does (store.create_trail), opens a TrailWriter as the
child does, then produces forever: a text delta every ~1 ms and a tool_call /
tool_result pair every ~20 ms. Every logical record i carries the marker
`<r{i}>` in a string field (text deltas get merged per batch, so markers are
how the parent counts what persisted). Before appending record i it publishes
its produce time (time.time()) at slot i and then the count i+1 in the shared
file SHM_PATH (mmap), so the parent can read both after the SIGKILL.

Shared layout: int64 produced count, then float64 produce times.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
import time

HEADER = 8
SLOT = 8


def main() -> int:
    shm_path, sid = sys.argv[1], sys.argv[2]
    from zapcli.redact import secret_values
    from zapcli.trail import store
    from zapcli.trail.writer import TrailWriter

    fd = os.open(shm_path, os.O_RDWR)
    size = os.fstat(fd).st_size
    shm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    capacity = (size - HEADER) // SLOT

    path = store.create_trail(sid, {"session": "bench-crash", "cli": "zapcli", "task": "crash bench",
                                    "cwd": os.getcwd(), "timeout_s": 300.0}, secret_values())
    w = TrailWriter(path, start_seq=2, secrets=secret_values())
    w.append("start", {"pid": os.getpid(), "definition": None, "tools": ["read_file"], "diagnostics": 0})

    pack_time = struct.Struct("d").pack_into
    pack_count = struct.Struct("q").pack_into
    words = ["Looking ", "at ", "the ", "module, ", "the ", "parser ", "handles ", "errors.\n"]
    i = 0
    tick = 0
    next_tool = time.monotonic() + 0.020

    def produce(rtype: str, fields: dict) -> None:
        nonlocal i
        if i >= capacity:
            time.sleep(1)  # out of slots: idle until killed (never happens in 2 s)
            return
        pack_time(shm, HEADER + SLOT * i, time.time())
        pack_count(shm, 0, i + 1)
        w.append(rtype, fields)
        i += 1

    while True:
        tick += 1
        produce("text", {"delta": f"<r{i}>{words[tick % len(words)]}"})
        if time.monotonic() >= next_tool:
            next_tool += 0.020
            call_id = f"call_{tick:06d}"
            produce("tool_call", {"call_id": call_id, "name": "read_file",
                                  "arguments": {"path": f"src/mod_{tick % 40}.py", "marker": f"<r{i}>"}})
            produce("tool_result", {"call_id": call_id, "ok": True,
                                    "content": f"<r{i}>" + "def handler(req):\n    return parse(req)\n" * 12,
                                    "duration_ms": 2})
        time.sleep(0.001)


if __name__ == "__main__":
    raise SystemExit(main())
