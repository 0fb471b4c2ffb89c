"""The runner's cheap look at its trail (`trail.latest.Watch`): what follows
the spawn record, the same records the summary reads, whatever is appended,
torn or rewritten meanwhile."""

from __future__ import annotations

import os

from zapcli.trail import reader, records
from zapcli.trail.latest import Latest, Watch


def _line(rtype, seq, **fields):
    return records.encode(records.make(rtype, seq, fields), [])


def _summary_view(path):
    s = reader.summarize(reader.read(path))
    return Latest(s.process, s.start, s.final)


def test_watch_reads_what_the_summary_reads_as_records_land(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("spawn", 0, task="x" * (1 << 20)))  # a 1 MB task
    watch = Watch(path)
    assert watch.read() == Latest() == _summary_view(path)
    with open(path, "ab") as f:
        f.write(_line("process", 1, pid=11, create_time=1.5, mono=2.0))
    assert watch.read().process.pid == 11
    whole = _line("process", 2, pid=12, create_time=1.5)
    with open(path, "ab") as f:
        f.write(whole[:20])  # a writer caught mid-append: its torn line is not read yet
    assert watch.read().process.pid == 11
    with open(path, "ab") as f:
        f.write(whole[20:] + _line("start", 3, pid=12, create_time=1.5)
                + _line("status", 4, status="lost", reason="gone")
                + _line("status", 5, status="completed", exit_code=0))
    seen = watch.read()
    assert (seen.process.pid, seen.start.pid, seen.final.status) == (12, 12, "lost")  # the first is final
    assert seen == _summary_view(path)


def test_watch_follows_a_trail_rewritten_in_place(tmp_path):
    """Retention rewrites a trail as a new file (temp file + rename): the
    watch finds where its spawn record ends again."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(_line("spawn", 0, task="a long task " * 1000) + _line("process", 1, pid=7))
    watch = Watch(path)
    assert watch.read().process.pid == 7
    tmp = tmp_path / "t.new"
    tmp.write_bytes(_line("spawn", 0, task="short") + _line("process", 1, pid=8)
                    + _line("status", 2, status="cancelled"))
    os.replace(tmp, path)
    seen = watch.read()
    assert (seen.process.pid, seen.final.status) == (8, "cancelled") and seen == _summary_view(path)


def test_a_trail_with_no_whole_first_line_yet_is_read_once_it_has_one(tmp_path):
    path = tmp_path / "t.jsonl"
    spawn = _line("spawn", 0, task="t")
    path.write_bytes(spawn[:10])
    watch = Watch(path)
    assert watch.read() == Latest()
    with open(path, "ab") as f:
        f.write(spawn[10:] + _line("process", 1, pid=9))
    assert watch.read().process.pid == 9
