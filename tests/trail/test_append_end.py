"""The one append (seq assigned under the trail's lock) and the one end (the
first terminal status wins), with real processes racing on one file."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import threading
from pathlib import Path

from zapcli.trail import ending, reader, records, store
from zapcli.trail.model import Outcome, SpawnRecord, Status
from zapcli.trail.writer import TrailWriter


def _new_trail(path):
    path.write_bytes(records.encode(records.make("spawn", 0, {"task": "t"}), []))
    return path


def _appender(path: str, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(n):
        size = rng.choice([10, 300, 5000, 40000, 60000])
        store.append(Path(path), "diagnostic", {"writer": seed, "i": i, "pad": "x" * size}, sync=False)


def test_concurrent_appenders_never_splice_and_seqs_are_unique(tmp_path):
    """C16, library level: 8 processes x 60 appends of up to ~60 KB each."""
    path = _new_trail(tmp_path / "t.jsonl")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_appender, args=(str(path), 60, s)) for s in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    lines = path.read_bytes().split(b"\n")[:-1]
    recs = [json.loads(line) for line in lines]  # every line parses
    assert len(recs) == 1 + 8 * 60
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for w in range(8):  # each writer's records in its own order
        mine = [r["i"] for r in recs if r.get("writer") == w]
        assert mine == list(range(60))


def _ender(path: str, status: str, barrier) -> None:
    barrier.wait()
    final, ours = ending.end(Path(path), Outcome(Status(status), None, status))
    os._exit(0 if ours else 3)


def test_twenty_concurrent_enders_one_wins_and_all_agree(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(20)
    statuses = ["lost", "cancelled", "timeout", "completed"] * 5
    procs = [ctx.Process(target=_ender, args=(str(path), st, barrier)) for st in statuses]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert sorted(p.exitcode for p in procs) == [0] + [3] * 19
    trail = reader.read(path)
    finals = [r for r in trail.records if r["type"] == "status"]
    assert len(finals) == 1  # the losers wrote nothing
    assert reader.summarize(trail).final.raw == finals[0]


def test_the_lock_is_reentrant_in_a_thread_and_exclusive_across_threads(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    order = []
    with store.locked(path):
        with store.locked(path):  # the same thread again: no deadlock
            seq = store.append(path, "steer", {"text": "a", "delivered": False})
        other = threading.Thread(target=lambda: (store.append(path, "steer", {"text": "b"}),
                                                 order.append("other")))
        other.start()
        other.join(0.3)
        assert other.is_alive()  # waits for our lock
        order.append("mine")
    other.join(5)
    assert order == ["mine", "other"] and seq == 1


def test_writer_end_after_an_observer_end_records_nothing(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=0, secrets=[], interval_s=60)
    w.append("text", {"delta": "hi"})
    final, ours = ending.end(path, Outcome(Status.CANCELLED, None, "killed"), by="kill")
    assert ours and final.status == "cancelled"
    assert w.end(Outcome(Status.COMPLETED, 0, None)) is False
    w.close()
    recs = reader.read(path).records
    assert [r["status"] for r in recs if r["type"] == "status"] == ["cancelled"]
    assert any(r["type"] == "text" for r in recs)  # its queue was still written


def test_a_fifo_in_place_of_a_trail_is_refused_at_once(tmp_path):
    path = tmp_path / "sa_20260101_0000aaaa.jsonl"
    os.mkfifo(path)
    assert store.append(path, "steer", {"text": "x"}) is None
    try:
        store.read_bytes(path)
    except OSError:
        pass
    else:
        raise AssertionError("a FIFO was read")


def test_spawn_record_reads_defaults_and_survives_damage():
    good = SpawnRecord.from_record({"session": "s", "cli": "sh", "task": "t", "ts": "x",
                                    "cwd": "/w", "workspace": "/w", "timeout_s": 12,
                                    "kill_grace_s": 0, "max_concurrent": 0, "after": ["a"]})
    assert (good.timeout_s, good.kill_grace_s, good.max_concurrent, good.after) == (12.0, 0.0, 0, ("a",))
    bad = SpawnRecord.from_record({"timeout_s": "soon", "kill_grace_s": -1, "after": "x",
                                   "max_tokens": True, "workspace": 5, "approval": None})
    assert (bad.timeout_s, bad.kill_grace_s, bad.after, bad.max_tokens) == (300.0, 3.0, (), None)
    assert (bad.workspace, bad.cwd, bad.approval, bad.executor) == ("/", "/", "workspace", "local")


def test_status_is_a_string_everywhere():
    assert Status.COMPLETED == "completed" and {"completed": 1}[Status.COMPLETED] == 1
    assert f"{Status.LOST}" == "lost" and json.dumps({"s": str(Status.LOST)}) == '{"s": "lost"}'
    assert Status.TIMEOUT.terminal and not Status.QUEUED.terminal
    assert Status.parse("nope") is None
