"""A full disk (ENOSPC) on a real small filesystem: a write that fails
part-way never leaves half a record, and seqs stay in order afterwards
(#12.3)."""

from __future__ import annotations

import errno
import json

import pytest

from tests.conftest import wait_until
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
    assert seqs == list(range(len(seqs)))  # #24.14: a dropped record leaves no gap
    notes = [r for r in recs if r["type"] == "diagnostic" and r.get("name") == "disk_full"]
    assert recs[-1]["type"] == "report"
    assert len(notes) == 1 and "40 records were dropped" in notes[0]["message"]


def test_the_note_lands_once_there_is_room_even_when_nothing_else_comes(small_disk):
    """#24.14: the count was written only before a later record; a sync
    record the disk refused (a helper's, the start) was not counted at all."""
    path = _new_trail(small_disk.path / "t.jsonl")
    w = TrailWriter(path, start_seq=0, secrets=[], interval_s=0.05)
    small_disk.fill()
    for i in range(30):  # dropped by the writer's thread or with the sync record
        w.append("tool_result", {"call_id": str(i), "ok": True, "content": "y" * 3000})
    assert not w.write_sync("helper", {"pid": 1, "name": "bash", "pad": "h" * 5000})
    assert w.dropped == 31
    small_disk.free()
    wait_until(lambda: any(r["type"] == "diagnostic" for r in _records(path)), 10)  # the thread writes it
    w.close()
    recs = _records(path)
    assert [r["type"] for r in recs] == ["spawn", "diagnostic"] and recs[1]["seq"] == 1
    assert "31 records were dropped" in recs[1]["message"]


SECRET = "sk-node-secret-0123456789"


def test_ready_made_records_go_in_whole_or_not_at_all(small_disk):
    """`store.append_records` (a Ray node's records brought home): seqs
    assigned inside after the trail's last, each record masked and within
    the size cap, and a batch the disk cannot hold leaves no part of it."""
    path = _new_trail(small_disk.path / "t.jsonl")
    assert store.append_records(path, [{"type": "start", "ts": "then", "seq": 7}]) == 1
    small_disk.fill()
    size = path.stat().st_size
    batch = [{"type": "tool_result", "call_id": str(i), "ok": True, "content": "y" * 3000} for i in range(40)]
    with pytest.raises(OSError) as err:
        store.append_records(path, batch)
    assert err.value.errno == errno.ENOSPC
    assert path.stat().st_size == size
    _records(path)
    small_disk.free()
    big = {"type": "text", "delta": f"{SECRET} " + "z" * 200_000}
    assert store.append_records(path, [big, {"type": "report", "text": SECRET}], secrets=[SECRET.encode()]) == 2
    data = path.read_bytes()
    recs = _records(path)
    assert [(r["type"], r["seq"]) for r in recs] == [("spawn", 0), ("start", 1), ("text", 2), ("report", 3)]
    assert recs[1]["ts"] == "then" and recs[2]["ts"] and recs[2]["v"] == records.SCHEMA_VERSION
    assert SECRET.encode() not in data and recs[3]["text"] == "***"
    assert all(len(line) < records.MAX_RECORD_BYTES for line in data.split(b"\n")[1:])


def test_a_ray_nodes_trail_comes_home_whole_on_a_full_disk(small_disk, monkeypatch):
    """ray_collect on a full disk: the import fails without leaving half a
    record; once there is room, the same frames bring every record home once."""
    from zapcli import ids
    from zapcli.executors import ray_collect
    from zapcli.executors import ray_wire as wire

    monkeypatch.setenv("ZAPCLI_HOME", str(small_disk.path / "home"))
    sid = ids.new_id()
    path = store.create_trail(sid, {"task": "t"}, [])
    node = b"".join(json.dumps({"v": 1, "seq": n, "ts": "t", "type": t, "delta": "y" * 3000}).encode() + b"\n"
                    for n, t in [(0, "spawn"), (1, "process")] + [(n, "text") for n in range(2, 40)])
    frames = [wire.frame(0, "t", 0, node), wire.end_frame(1, "recorded")]  # what the pool ships
    small_disk.fill()
    with pytest.raises(OSError):
        ray_collect.apply(sid, frames, 0)
    _records(path)
    small_disk.free()
    got, cursor = ray_collect.apply(sid, frames, 0)
    assert (got.records, got.ended, cursor) == (38, True, 2)
    recs = _records(path)
    assert [(r["seq"], r.get("node_seq")) for r in recs[1:-1]] == [(n - 1, n) for n in range(2, 40)]
    assert recs[-1]["type"] == "collected" and recs[-1]["complete"] is True
