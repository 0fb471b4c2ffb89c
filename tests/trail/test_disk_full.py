"""A full disk (ENOSPC) on a real small filesystem: a write that fails
part-way never leaves half a record, and seqs stay in order afterwards
(#12.3)."""

from __future__ import annotations

import json

from zapcli.trail import records, store
from zapcli.trail.writer import TrailWriter


def _records(path):
    data = path.read_bytes()
    assert data.endswith(b"\n"), data[-80:]  # ends on a whole record
    return [json.loads(line) for line in data.split(b"\n")[:-1]]  # every line parses


def _new_trail(path):
    path.write_bytes(records.encode(records.make("spawn", 0, {"task": "t"}), []))
    return path


def test_a_failed_append_is_cut_back_to_a_whole_record(small_disk):
    path = _new_trail(small_disk.path / "t.jsonl")
    assert store.append(path, "text", {"delta": "a"}) == 1
    small_disk.fill()
    size = path.stat().st_size
    # 20 KB cannot fit: the kernel writes up to the page boundary, then ENOSPC
    assert store.append(path, "text", {"delta": "x" * 20000}) is None
    assert path.stat().st_size == size
    _records(path)
    small_disk.free()
    assert store.append(path, "text", {"delta": "b"}) == 2
    seqs = [r["seq"] for r in _records(path)]
    assert seqs == [0, 1, 2]


def test_the_batched_writer_drops_whole_batches_and_says_so(small_disk):
    path = _new_trail(small_disk.path / "t.jsonl")
    w = TrailWriter(path, start_seq=0, secrets=[], interval_s=60)
    w.append("text", {"delta": "first"})
    w.flush()
    small_disk.fill()
    for i in range(40):
        w.append("tool_result", {"call_id": str(i), "ok": True, "content": "y" * 3000})
    w.flush()
    _records(path)  # no half batch on disk
    assert w.dropped == 40
    small_disk.free()
    w.append("text", {"delta": "after"})
    assert w.write_sync("report", {"text": "done"})
    w.close()
    recs = _records(path)
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    notes = [r for r in recs if r["type"] == "diagnostic" and r.get("name") == "disk_full"]
    assert recs[-1]["type"] == "report"
    assert len(notes) == 1 and "40 records were dropped" in notes[0]["message"]
