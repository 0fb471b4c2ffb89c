"""`wait` and `poll` wake at a subagent's end, not at their interval (#24.15):
inotify on the state folder, with the 500 ms interval as the fallback."""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.conftest import wait_until
from zapcli.cli.settings import for_observers
from zapcli.ops import poll as poll_ops
from zapcli.trail import records, store

pytestmark = [pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="inotify is Linux's"),
              pytest.mark.timeout(45)]


def test_wait_and_poll_are_woken_by_the_end(zap, monkeypatch):
    """With the interval made longer than the test, only the end itself can
    wake them in time (before: each slept its 500 ms tick)."""
    monkeypatch.setattr(poll_ops, "TICK_S", 600.0)
    go = zap.cwd / "go"
    a = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.05; done; echo A")
    b = zap.spawn_sh(f"until [ -e {go}2 ]; do sleep 0.05; done; echo B")
    wait_until(lambda: zap.status(a) == "running" and zap.status(b) == "running", 20)
    threading.Timer(0.5, go.touch).start()
    res = poll_ops.wait([a], for_observers(), timeout_s=30)
    assert not res.timed_out and res.views[0].status == "completed", res
    threading.Timer(0.5, (zap.cwd / "go2").touch).start()
    got = poll_ops.poll([b], for_observers(), wait_secs=30)
    assert got.entries[0].view.status == "completed", got.entries[0].view


def _trail(path):
    path.write_bytes(records.encode(records.make("spawn", 0, {"task": "t"}), []))
    return path


def test_only_a_waking_record_wakes_the_waker(zap):
    from zapcli.lifecycle.wake import Waker

    sid = "sa_20260101_0000aaaa"
    path = store.path_for(sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    _trail(path)
    stop = threading.Event()

    def chatter() -> None:
        while not stop.wait(0.02):
            store.append(path, "text", {"delta": "still working"})
    threading.Thread(target=chatter, daemon=True).start()
    with Waker([sid], (b'"type":"status"',)) as waker:
        began = time.monotonic()
        waker.sleep(1.0)  # text keeps coming: none of it ends the wait
        assert time.monotonic() - began >= 0.95
        threading.Timer(0.3, lambda: store.append(path, "status", {"status": "completed"})).start()
        waker.sleep(60)  # returns at the status (the test's own timeout is far shorter)
    stop.set()


def test_a_replaced_or_removed_trail_wakes_the_waker(zap):
    from zapcli.lifecycle.wake import Waker

    sid = "sa_20260101_0000bbbb"
    path = store.path_for(sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    _trail(path)
    with Waker([sid], (b'"type":"status"',)) as waker:
        new = path.with_name(".trimmed")
        new.write_bytes(path.read_bytes() + records.encode(records.make("status", 1, {"status": "failed"}), []))
        threading.Timer(0.3, lambda: os.replace(new, path)).start()  # a trim's rewrite, with the end in it
        waker.sleep(60)
        threading.Timer(0.3, path.unlink).start()
        waker.sleep(60)


def test_an_event_loop_waits_on_the_wakers_descriptor(zap):
    """The asyncio API's way (`fileno` + `woken`, on the feed): the
    descriptor turns readable at any change, and `woken` says whether what
    came ends the wait — chatter does not, a status does — without blocking."""
    import select

    from zapcli.lifecycle.wake import Waker

    sid = "sa_20260101_0000cccc"
    path = store.path_for(sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    _trail(path)
    with Waker([sid], (b'"type":"status"',)) as waker:
        fd = waker.fileno()
        assert fd is not None
        assert select.select([fd], [], [], 0.2)[0] == []  # nothing written yet
        store.append(path, "text", {"delta": "still working"})
        assert select.select([fd], [], [], 5)[0] == [fd]
        began = time.monotonic()
        assert waker.woken() is False  # chatter: read, and not a reason to wake
        assert time.monotonic() - began < 0.5
        assert select.select([fd], [], [], 0.2)[0] == []  # the descriptor was left drained
        store.append(path, "status", {"status": "completed"})
        assert select.select([fd], [], [], 5)[0] == [fd]
        assert waker.woken() is True


def test_a_waiter_on_a_remote_subagent_looks_for_its_end(zap):
    """A Ray runner's end is in no trail here until an observer collects it:
    nothing can wake the waiter, so it sleeps no longer than the executor's
    look interval (before: the 500 ms fallback, whatever it was asked)."""
    from zapcli.executors.ray import RayExecutor
    from zapcli.lifecycle.wake import Waker

    here, there = "sa_20260101_0000aaaa", "sa_20260101_0000bbbb"
    for sid, executor in ((here, "local"), (there, "ray")):
        path = store.path_for(sid)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(records.encode(records.make("spawn", 0, {"task": "t", "executor": executor}), []))
    with Waker([here], (b'"type":"status"',)) as waker:
        assert waker.look_s is None  # a local end wakes it
    with Waker([here, there], (b'"type":"status"',)) as waker:
        assert waker.look_s == RayExecutor.look_every_s == 0.25
        waker.sleep(600)  # returns to look (the test's own timeout is far shorter)
