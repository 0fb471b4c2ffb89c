"""The queue's drain reads again only the trails that changed since its
process's last drain of that session (#32: an in-process spawn, `zapcli run`'s
or the MCP server's, paid a read of every still-active trail: O(n²) for a
fleet), and never misses a change: a trail that grew, or was replaced by
another file of the same size and time, is read again.

Real trails on disk (the store API), a real runner for what a drain starts;
whole-trail reads are counted around the real `store.read_bounded`.
"""

from __future__ import annotations

import os
import time

import orjson
import pytest

from tests.conftest import isolate
from zapcli import ids
from zapcli.config import Settings
from zapcli.lifecycle import queue
from zapcli.lifecycle import session as sessions
from zapcli.supervisor.launch import process_create_time
from zapcli.trail import store

SESSION = "queue-reads"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    monkeypatch.setattr(queue, "_SEEN", {}, raising=False)  # each test's process starts cold


def _trail(task: str, cwd: str) -> str:
    sid = ids.new_id()
    sessions.add(SESSION, sid)
    store.create_trail(sid, {"session": SESSION, "cli": "sh", "task": task, "cwd": cwd,
                             "workspace": cwd, "timeout_s": 60.0, "after": []}, [])
    return sid


def _running(cwd: str) -> str:
    """A subagent whose runner is, by its trail, this very process (alive)."""
    sid = _trail("sleep 60", cwd)
    me = os.getpid()
    store.append(store.path_for(sid), "process", {"pid": me, "create_time": process_create_time(me)})
    return sid


def _reads(monkeypatch) -> list[str]:
    seen: list[str] = []
    read_bounded = store.read_bounded

    def counting(path, *a, **kw):
        seen.append(path.stem)
        return read_bounded(path, *a, **kw)

    monkeypatch.setattr(store, "read_bounded", counting)
    return seen


def _ended(sid: str, timeout: float = 30.0) -> str | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in store.path_for(sid).read_bytes().splitlines():
            rec = orjson.loads(line)
            if rec.get("type") == "status":
                return rec["status"]
        time.sleep(0.05)
    return None


def test_a_drain_reads_again_only_the_trails_that_changed(tmp_path, monkeypatch):
    running = _running(str(tmp_path))
    queued = [_trail("true", str(tmp_path)) for _ in range(5)]
    settings = Settings(max_concurrent=1)
    reads = _reads(monkeypatch)
    assert queue.drain(SESSION, settings) == []  # the cap is full: nothing starts
    assert sorted(set(reads)) == sorted([running, *queued])  # a cold process reads each
    reads.clear()
    assert queue.drain(SESSION, settings) == []
    assert reads == []  # nothing changed: nothing read again
    store.append(store.path_for(queued[2]), "held", {"reason": "a test", "until": time.time() + 60})
    assert queue.drain(SESSION, settings) == []
    assert reads == [queued[2]]


@pytest.mark.parametrize("how", ["appended", "replaced by one of the same size and time"])
def test_a_drain_sees_a_trail_that_changed_since_its_last(tmp_path, monkeypatch, how):
    """The running one ends between two drains of one process: the second
    starts the queued one in its slot (a drain that kept what it read first
    would still count it running, its pid being alive)."""
    running = _running(str(tmp_path))
    waiting = _trail("true", str(tmp_path))
    settings = Settings(max_concurrent=1)
    assert queue.drain(SESSION, settings) == []
    path = store.path_for(running)
    if how == "appended":
        store.append(path, "status", {"status": "completed", "exit_code": 0})
    else:  # retention's rewrite is a new file: here one of the very same size and times
        old = path.read_bytes()
        st = os.stat(path)
        ended = old.splitlines(keepends=True)
        line = orjson.dumps({"type": "status", "seq": 9, "status": "completed", "exit_code": 0})
        pad = len(ended[-1]) - len(line) - len(b',"p":""\n')
        assert pad >= 0, ended[-1]
        ended[-1] = line[:-1] + b',"p":"' + b"x" * pad + b'"}\n'
        new = b"".join(ended)
        assert len(new) == len(old)
        tmp = path.with_suffix(".new")
        tmp.write_bytes(new)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.rename(tmp, path)
        assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert queue.drain(SESSION, settings) == [waiting]
    assert _ended(waiting) == "completed"
