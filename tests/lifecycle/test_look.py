"""Looking is not acting (issue 29 item 2): the pure look says what a
subagent is now — a dead runner's `lost`, a hook due, an on-finish nobody
started — and writes nothing; the acting observer records it."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import sleep_marker, supervisor_pid, trail_records, wait_until


def _snapshot(home: Path) -> dict[str, tuple]:
    """Every file and folder under the state folder: kind, size, times, content."""
    out: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(home):
        for name in dirs + files:
            path = Path(folder) / name
            st = os.lstat(path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and \
                not path.is_symlink() else ""
            # a live runner's heartbeat touches its own `.end` slot every 2 s: its times are the
            # runner's, never the look's (its content still counts)
            times = () if name.endswith(".end") else (st.st_mtime_ns, st.st_ctime_ns)
            out[str(path.relative_to(home))] = (st.st_mode, st.st_size, *times, digest)
    return out


@pytest.fixture
def fleet(zap, tmp_path):
    """A running, a dead, a stalled-with-a-hook, a queued and an ended-with-an-
    on-finish-nobody-started subagent, each as a person would meet them."""
    log = tmp_path / "hooks.log"
    running = zap.spawn_sh(f"sleep {sleep_marker(2901)}")
    # in a session of its own: no drain of the others' session (an on-finish helper ending
    # late, a runner's end) observes it and records `lost` before the look is taken
    proc = zap("spawn", "--cli", "sh", "--", f"sleep {sleep_marker(2902)}",
               env={"ZAPCLI_SESSION": zap.env["ZAPCLI_SESSION"] + "-dead"})
    assert proc.returncode == 0, proc.err
    dead = proc.out.strip()
    stalled = zap.spawn_sh(f"sleep {sleep_marker(2903)}", "--on-event",
                           f"stalled=echo stalled >> {log}")
    queued = zap.spawn_sh("true", "--after", running)
    ended = zap.spawn_sh("true", "--on-finish", f"echo ended >> {log}")
    zap("wait", ended, "--timeout", "20", check=True)
    for sid in (dead, stalled):
        wait_until(lambda sid=sid: any(r["type"] == "start" for r in trail_records(zap.trail(sid))))
    # `ended`'s runner and on-finish helper gone first: a runner's end work (retention, the
    # queue) observes other trails, and would record `dead` lost before the look is taken
    path = zap.trail(ended)
    wait_until(lambda: any(r["type"] == "on_finish" and r.get("state") == "done"
                           for r in trail_records(path)), 20)
    ender = supervisor_pid(zap, ended)
    wait_until(lambda: not os.path.exists(f"/proc/{ender}")
               or open(f"/proc/{ender}/stat").read().split()[2] == "Z", 20)
    time.sleep(0.5)  # its on-finish helper's own end
    os.kill(supervisor_pid(zap, dead), signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{supervisor_pid(zap, dead)}")
               or open(f"/proc/{supervisor_pid(zap, dead)}/stat").read().split()[2] == "Z")
    # the on-finish command's claim and run undone: as if its ender died before claiming it
    kept = [line for line in path.read_bytes().splitlines(keepends=True) if b'"type":"on_finish"' not in line]
    path.write_bytes(b"".join(kept))
    log.unlink()
    time.sleep(1.2)  # the stall threshold (1 s) passes for `stalled`
    return {"running": running, "dead": dead, "stalled": stalled, "queued": queued, "ended": ended,
            "log": log}


def test_a_look_writes_nothing_and_still_says_what_an_observer_would_record(zap, fleet):
    from zapcli.lifecycle.feed import Feed
    from zapcli.lifecycle.look import Looker, look, look_at

    ids = [fleet[k] for k in ("running", "dead", "stalled", "queued", "ended")]
    before = _snapshot(zap.home)
    with Feed(interval=0.1) as feed:
        seen = {sid: look_at(sid, stall_s=1.0) for sid in ids}
        assert look(fleet["dead"]).status == "lost"  # the board's check: a status, no record
        looker = Looker(stall_s=1.0)
        for _ in range(3):
            looker.look_all(ids, feed.changes(0.1))
    assert _snapshot(zap.home) == before  # not a byte, not a file, not a time

    dead = seen[fleet["dead"]]
    assert dead.view.status == "lost" and dead.finding is not None and dead.acts
    assert not any(r["type"] == "status" for r in trail_records(zap.trail(fleet["dead"])))
    assert [o.event for o in seen[fleet["stalled"]].due] == ["stalled"]
    assert seen[fleet["ended"]].orphaned_finish and seen[fleet["ended"]].acts
    assert seen[fleet["running"]].view.status == "running" and not seen[fleet["running"]].acts
    assert seen[fleet["queued"]].view.status == "queued"
    assert not fleet["log"].exists()  # no hook was started

    # the acting observer, given the same looks, records and runs what they found
    from zapcli.lifecycle.observe import act

    assert act(seen[fleet["dead"]], stall_s=1.0).status == "lost"
    assert [r["status"] for r in trail_records(zap.trail(fleet["dead"])) if r["type"] == "status"] == ["lost"]
    act(seen[fleet["stalled"]], stall_s=1.0)
    act(seen[fleet["ended"]])
    wait_until(lambda: fleet["log"].exists() and sorted(fleet["log"].read_text().split())
               == ["ended", "stalled"], 20)


def test_a_looker_rereads_only_the_trails_that_changed(zap, monkeypatch):
    from zapcli.lifecycle.feed import Feed
    from zapcli.lifecycle.look import Looker
    from zapcli.trail import reader, store

    ids = [zap.spawn_sh("true") for _ in range(6)]
    zap("wait", *ids, "--timeout", "30", check=True)
    reads: list[str] = []
    real = reader.read
    monkeypatch.setattr(reader, "read", lambda path: reads.append(path.name[:-6]) or real(path))
    looker = Looker()
    with Feed(interval=0.1) as feed:
        first = looker.look_all(ids, feed.changes(0))
        assert sorted(reads) == sorted(ids) and all(v.view.status == "completed" for v in first.values())
        reads.clear()
        for _ in range(3):
            looker.look_all(ids, feed.changes(0.05))
            looker.look_all(ids)  # no feed: each trail's size and time are checked, none read
        assert reads == []
        store.append(store.path_for(ids[2]), "diagnostic", {"dimension": "test", "name": "poke",
                                                            "message": "a change"})
        changed = feed.changes(2)
        assert changed == {ids[2]}
        looker.look_all(ids, changed)
        assert reads == [ids[2]]
        os.unlink(store.path_for(ids[4]))
        gone = looker.look_all(ids, feed.changes(2))
        from zapcli.errors import NotFound

        assert isinstance(gone[ids[4]], NotFound)
