"""The batched trail writer: batching, sync records, torn-line repair, size cap,
secret masking, and surviving a full disk (a real tmpfs filled to the brim)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import orjson
import pytest

from tests.conftest import wait_until
from zapcli.trail import reader, records, store
from zapcli.trail.writer import TrailWriter


def _new_trail(path: Path) -> Path:
    path.write_bytes(records.encode(records.make("spawn", 0, {"task": "t"}), []))
    return path


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def test_append_is_batched_off_the_calling_thread(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[], interval_s=0.25)
    w.append("diagnostic", {"dimension": "x", "name": "n", "message": "m"})
    assert len(_lines(path)) == 1  # nothing written synchronously
    wait_until(lambda: len(_lines(path)) == 2, timeout=3)
    w.close()


def test_sync_record_lands_before_return_and_after_queued_ones(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[], interval_s=60)
    for i in range(5):
        w.append("tool_call", {"call_id": str(i), "name": "read", "arguments": {}})
    w.write_sync("report", {"text": "done"})
    recs = _lines(path)
    assert [r["type"] for r in recs] == ["spawn"] + ["tool_call"] * 5 + ["report"]
    seqs = [r["seq"] for r in recs[1:]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    w.close()


def test_consecutive_text_deltas_merge_within_a_batch(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[], interval_s=60)
    for part in ("Hel", "lo ", "world"):
        w.append("text", {"delta": part})
    w.append("thinking", {"delta": "hmm"})
    w.append("text", {"delta": "!"})
    w.flush()
    recs = _lines(path)[1:]
    assert [(r["type"], r["delta"]) for r in recs] == [("text", "Hello world"), ("thinking", "hmm"), ("text", "!")]
    w.close()


def test_a_torn_fragment_is_ended_before_the_next_record(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    with open(path, "ab") as f:
        f.write(b'{"v":1,"seq":7,"ty')
    w = TrailWriter(path, start_seq=1, secrets=[])
    w.write_sync("report", {"text": "ok"})
    w.close()
    trail = reader.read(path)
    assert [r["type"] for r in trail.records] == ["spawn", "report"]
    assert len([e for e in trail.entries if not isinstance(e, dict)]) == 1  # the fragment, on its own line


def test_no_record_exceeds_64kb_and_tool_results_fold_at_16kb(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[])
    w.append("tool_result", {"call_id": "1", "ok": True, "content": "é" * 100_000, "duration_ms": 1})
    w.append("text", {"delta": "x" * 300_000})
    w.append("tool_call", {"call_id": "2", "name": "write", "arguments": {"a": "y" * 200_000, "b": "z" * 200_000}})
    w.close()
    raw = path.read_bytes().splitlines()[1:]
    assert len(raw) == 3
    assert all(len(line) < records.MAX_RECORD_BYTES for line in raw)
    result = orjson.loads(raw[0])
    assert len(result["content"].encode()) <= records.TOOL_RESULT_MAX_BYTES + 100
    assert "bytes folded" in result["content"]


def test_secrets_are_masked_in_records(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[b"sk-verysecretvalue123"])
    w.append("tool_result", {"call_id": "1", "ok": True, "content": "key=sk-verysecretvalue123!", "duration_ms": 1})
    w.close()
    text = path.read_text()
    assert "sk-verysecretvalue123" not in text and "key=***!" in text


@pytest.fixture
def tiny_fs(tmp_path):
    """A real 256 KiB tmpfs: the only honest way to get ENOSPC from a file here."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); ENOSPC is not simulated")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_full_disk_drops_and_counts_then_reports_when_space_returns(tiny_fs):
    path = _new_trail(tiny_fs / "t.jsonl")
    filler = tiny_fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    w = TrailWriter(path, start_seq=1, secrets=[], interval_s=60)
    for i in range(50):
        w.append("tool_call", {"call_id": str(i), "name": "bash", "arguments": {"c": "x" * 200}})
    w.flush()
    assert w.dropped_total >= 1
    filler.unlink()
    w.append("text", {"delta": "after"})
    assert w.write_sync("report", {"text": "final"}, retry_s=2)
    w.close()
    recs = reader.read(path).records
    diag = [r for r in recs if r["type"] == "diagnostic"]
    assert diag and "dropped" in diag[0]["message"]
    assert recs[-1]["type"] == "report" and recs[-1]["text"] == "final"


def test_append_never_follows_a_symlink(tmp_path):
    target = tmp_path / "victim"
    target.write_text("keep")
    link = tmp_path / f"sa_{uuid.uuid4().hex[:8]}.jsonl"
    os.symlink(target, link)
    assert store.append(link, "status", {"status": "lost"}) is None
    assert target.read_text() == "keep"


def test_append_is_cheap_on_the_calling_thread(tmp_path):
    """Not a speed assertion: proves append does no I/O (the file is unchanged)."""
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[], interval_s=60)
    size = path.stat().st_size
    t0 = time.perf_counter()
    for i in range(1000):
        w.append("text", {"delta": str(i)})
    assert path.stat().st_size == size
    assert time.perf_counter() - t0 >= 0
    w.close()
    assert len(_lines(path)) == 2  # merged into one text record


def test_records_appended_by_others_keep_seq_increasing_and_unglued(tmp_path):
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[], interval_s=60)
    w.append("text", {"delta": "a"})
    w.flush()
    store.append(path, "steer", {"text": "x", "delivered": False})  # another writer
    with open(path, "ab") as f:
        f.write(b'{"v":1,"seq":4,"type":"sta')  # and one that died mid-write
    w.append("tool_call", {"call_id": "1", "name": "read", "arguments": {}})
    w.write_sync("status", {"status": "completed"})
    w.close()
    trail = reader.read(path)
    seqs = [r["seq"] for r in trail.records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    assert reader.summarize(trail).final.status == "completed"


def test_appends_from_many_threads_land_whole_and_keep_nothing_for_the_collector(tmp_path):
    """#12 speed: the queue holds each record's three parts flat (no tuple kept
    per record, so the garbage collector is not set off by a long queue);
    appends from several threads at once must still land whole and in order."""
    import gc
    import threading

    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=1, secrets=[], interval_s=0.01)
    prepared = {t: [{"call_id": f"{t}-{i}", "name": f"tool{t}", "arguments": {"i": i}} for i in range(3000)]
                for t in range(4)}

    def work(t):
        for fields in prepared[t]:
            w.append("tool_call", fields)
            w.append("text", {"delta": f"<{t}>"})

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    w.flush()  # the backlog of the threads written (a flush under way finishes first)
    gc.collect()
    gc.disable()
    # The writer's thread held off while we count: its flush of what we append makes
    # objects of its own, and one caught half-way (a loaded machine) would be counted.
    with w._lock:
        try:
            before = gc.get_count()[0]
            for fields in prepared[0]:
                w.append("tool_call", fields)
            grown = gc.get_count()[0] - before
        finally:
            gc.enable()
    w.close()
    assert grown < 50, f"{grown} objects tracked by the collector were kept by 3000 appends"
    recs = _lines(path)[1:]
    calls = [r for r in recs if r["type"] == "tool_call"]
    assert len(calls) == 4 * 3000 + 3000
    for r in calls:
        t, i = r["call_id"].split("-")
        assert r["name"] == f"tool{t}" and r["arguments"] == {"i": int(i)}
    for t in range(4):  # each thread's records in its own order
        mine = [int(r["call_id"].split("-")[1]) for r in calls if r["call_id"].startswith(f"{t}-")]
        assert mine[:3000] == list(range(3000))
    texts = "".join(r["delta"] for r in recs if r["type"] == "text")
    assert sorted(texts.replace("><", ">\n<").split("\n")) == sorted([f"<{t}>" for t in range(4) for _ in range(3000)])
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


_APPENDER = """
import sys
from pathlib import Path
from zapcli.trail import store
path, who = Path(sys.argv[1]), sys.argv[2]
for n in range(150):
    assert store.append(path, "steer", {"text": f"{who}-{n}", "delivered": False}) is not None
"""


def test_a_trail_trimmed_while_others_append_loses_none_of_theirs(tmp_path):
    """#24.13: the writer replaces the trail with its trimmed copy while `send`,
    `approve` or an observer append; a lock won on the file that was replaced
    would let their records land in the old file, lost. Each appender's
    records (steering: never dropped by a trim) are all there once."""
    path = _new_trail(tmp_path / "t.jsonl")
    w = TrailWriter(path, start_seq=0, secrets=[], interval_s=0.01, trim_over=200_000)
    others = [subprocess.Popen([os.sys.executable, "-c", _APPENDER, str(path), who])
              for who in ("a", "b")]
    while any(p.poll() is None for p in others):
        w.append("tool_result", {"call_id": "c", "ok": True, "content": "z" * 8000})
        time.sleep(0.002)
    w.close()
    assert [p.returncode for p in others] == [0, 0]
    recs = _lines(path)
    assert any(r["type"] == "trimmed" for r in recs)
    steers = sorted(r["text"] for r in recs if r["type"] == "steer")
    assert steers == sorted(f"{who}-{n}" for who in ("a", "b") for n in range(150))
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert os.path.getsize(path) < 400_000
