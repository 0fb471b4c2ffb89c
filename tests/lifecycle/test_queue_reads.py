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

from tests.conftest import isolate, wait_until
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


def _reads(monkeypatch, how: str = "read_bounded") -> list[str]:
    """The trails `store.<how>` is asked for from now on (whole reads by default)."""
    seen: list[str] = []
    real = getattr(store, how)

    def counting(path, *a, **kw):
        seen.append(path.stem)
        return real(path, *a, **kw)

    monkeypatch.setattr(store, how, counting)
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


def _queued(cwd: str, *, cap: int = 1, after: list[str] | None = None, pool: str | None = None,
            task: str = "true") -> str:
    """A subagent as `spawn` leaves one that waits: its `queued` marker says its cap."""
    sid = ids.new_id()
    fields = {"session": SESSION, "cli": "sh", "task": task, "cwd": cwd, "workspace": cwd,
              "timeout_s": 60.0, "after": after or [], "max_concurrent": cap,
              **({"pool": pool} if pool else {})}
    sessions.add(SESSION, sid, queued=queue.marker(fields))
    store.create_trail(sid, fields, [])
    return sid


def test_a_cold_drain_behind_a_full_cap_reads_the_running_trails_not_the_queue(tmp_path, monkeypatch):
    """A runner's end, or a spawn, is a new process: it read every queued
    trail to find the cap full (O(queue) for each subagent of a fleet)."""
    running = _running(str(tmp_path))
    queued = [_queued(str(tmp_path)) for _ in range(30)]
    reads = _reads(monkeypatch)
    assert queue.drain(SESSION, Settings(max_concurrent=1)) == []
    assert running in reads
    assert set(reads) & set(queued) <= {queued[0]}  # the queue's head, to learn its cap is full
    assert sessions.active(SESSION) == [running, *queued]  # all still queued, none dropped


def test_one_that_may_start_is_still_found_behind_a_full_pool(tmp_path, monkeypatch):
    """Passed over unread only where its own marker says its pool is full
    for its cap: a later one with a larger cap, or another pool, starts;
    one whose `--after` dependency failed is failed now, full cap or not."""
    _running(str(tmp_path))  # the cap of 1 is full
    failed = _trail("false", str(tmp_path))
    store.append(store.path_for(failed), "status", {"status": "failed", "exit_code": 1})
    head = [_queued(str(tmp_path)) for _ in range(3)]
    dependent = _queued(str(tmp_path), after=[failed])
    more = [_queued(str(tmp_path)) for _ in range(3)]
    wider = _queued(str(tmp_path), cap=2)
    elsewhere = _queued(str(tmp_path), pool="other")
    reads = _reads(monkeypatch)
    assert queue.drain(SESSION, Settings(max_concurrent=1)) == [wider, elsewhere]
    assert not set(reads) & set([*head[1:], *more])
    assert _ended(dependent) == "failed"
    assert _ended(wider) == "completed" and _ended(elsewhere) == "completed"
    assert dependent not in sessions.active(SESSION)
    assert sessions.queued(SESSION).keys() == {*head, *more}


def test_a_marker_whose_subagent_started_all_the_same_counts_it_running(tmp_path, monkeypatch):
    """Its trail is what counts: a queued marker left beside a started runner
    (written by hand, or a start by a zapcli that left it) never starts a
    second runner, and the runner counts once its turn comes (where a runner
    starts, it takes its own marker away: `test_a_runner_takes_its_own_queued_marker_away`)."""
    queued = [_queued(str(tmp_path), cap=2) for _ in range(3)]
    me = os.getpid()
    store.append(store.path_for(queued[0]), "process", {"pid": me, "create_time": process_create_time(me)})
    assert queue.drain(SESSION, Settings()) == [queued[1]]  # one slot of two left
    assert queued[0] not in sessions.queued(SESSION)
    assert _ended(queued[1]) == "completed"  # (its end starts the third, in its slot)


def test_a_runners_end_reads_no_trail_to_find_it_has_no_subagents(tmp_path, monkeypatch):
    """C27 asks each ending runner for its own subagents still running: it
    read the first line of every active trail of its session, a parent or
    not; only one a spawn named as `parent` reads them now."""
    from zapcli.runner.pending import still_running

    me = _running(str(tmp_path))
    queued = [_queued(str(tmp_path)) for _ in range(20)]
    child = ids.new_id()
    fields = {"session": SESSION, "cli": "sh", "task": "true", "cwd": str(tmp_path),
              "workspace": str(tmp_path), "timeout_s": 60.0, "after": [], "parent": me}
    opened = _reads(monkeypatch, "open_read")  # a spawn record's read (its first line) too
    assert still_running(me, SESSION) == []
    assert opened == []
    sessions.add(SESSION, child, parent=me)
    store.create_trail(child, fields, [])
    assert still_running(me, SESSION) == [child]  # queued, not ended: still its own
    assert set(opened) >= {*queued, child}


def test_a_runner_takes_its_own_queued_marker_away(tmp_path, monkeypatch):
    """A runner started by whoever left its marker (a zapcli of before the
    markers, in a process that lived through an upgrade) must not stay
    passed over as queued: uncounted, the queue would start one more than
    the cap. The runner itself takes the marker away as it starts."""
    sid = _queued(str(tmp_path), task="sleep 30")
    with monkeypatch.context() as m:  # this process starts it as an older zapcli did
        m.setattr(sessions, "unqueue", lambda session, sid: None)
        assert queue.launch(sid, Settings())
    # gone while it runs (it sleeps 30 s), not only once it ended
    assert wait_until(lambda: sid not in sessions.queued(SESSION), 20)
    assert _ended(sid, timeout=0.2) is None
    from zapcli.ops.kill import kill

    kill([sid], Settings(), grace_s=0.5)
    assert _ended(sid) == "cancelled"


def test_a_runners_end_asks_the_trails_where_a_member_predates_the_parent_markers(tmp_path):
    """A child spawned by a zapcli of before the `parents/` markers (the
    session's members older than its `@since`) is found by its trail."""
    from zapcli.runner.pending import still_running

    me = _running(str(tmp_path))
    old = ids.new_id()
    sessions.add(SESSION, old)  # the first marker-writing spawn: `@since` is now
    since = tmp_path / "since"
    folder = sessions._dir(SESSION, "parents")
    since.write_text((folder / sessions.SINCE).read_text())
    # the old child: its markers made before `@since`, no parent marker, as an older zapcli left it
    stamp = int(since.read_text()) - 10**9
    for kind in ("all", "active"):
        (sessions._dir(SESSION, kind) / f"{stamp:020d}_{old}").touch()
        for path in sessions._members(SESSION, kind, old):
            if path.name.partition("_")[0] != f"{stamp:020d}":
                path.unlink()
    store.create_trail(old, {"session": SESSION, "cli": "sh", "task": "true", "cwd": str(tmp_path),
                             "workspace": str(tmp_path), "timeout_s": 60.0, "after": [],
                             "parent": me}, [])
    assert still_running(me, SESSION) == [old]
    sessions.deactivate(SESSION, old)
    assert still_running(me, SESSION) == []  # none older left: no trail asked
