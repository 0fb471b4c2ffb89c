"""The change feed (issue 29 item 2): which subagents' files changed, from
inotify on the state folder or, without it, from scans every interval —
the same answers either way, one session's or all."""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import wait_until


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "scans"])
def test_the_feed_names_what_changed_and_nothing_else(zap, inotify):
    from zapcli.lifecycle.feed import Feed
    from zapcli.trail import store

    quiet, chatty, ended = (zap.spawn_sh(cmd) for cmd in ("sleep 60", "sleep 60", "true"))
    zap("wait", ended, "--timeout", "20", check=True)
    time.sleep(0.3)  # the spawns' own writes settle
    with Feed(interval=0.2, inotify=inotify) as feed:
        assert feed.watching is inotify
        assert feed.changes(0.3) == set()
        store.append(store.path_for(chatty), "diagnostic", {"dimension": "t", "name": "n", "message": "m"})
        with open(store.path_for(ended, ".out"), "ab") as fh:
            fh.write(b"more output\n")
        started = time.monotonic()
        got: set[str] = set()
        while got != {chatty, ended} and time.monotonic() - started < 3:
            got |= feed.changes(1)
        assert got == {chatty, ended}
        # a trim replaces the file; a removal takes it away: both are changes
        path = store.path_for(chatty)
        path.with_suffix(".trimmed").write_bytes(path.read_bytes())  # a new file, as a trim writes
        os.replace(path.with_suffix(".trimmed"), path)
        os.unlink(store.path_for(ended))
        got = set()
        while got != {chatty, ended} and time.monotonic() - started < 6:
            got |= feed.changes(1)
        assert got == {chatty, ended}
        assert quiet not in got
    zap("kill", quiet, chatty)


def test_a_session_feed_names_its_own_members_and_new_ones(zap):
    from zapcli.lifecycle.feed import Feed

    mine = zap.spawn_sh("true")
    zap("wait", mine, "--timeout", "20", check=True)
    time.sleep(0.3)
    with Feed(session=zap.env["ZAPCLI_SESSION"], interval=0.2) as feed:
        other = zap("spawn", "--cli", "sh", "--", "true", env={"ZAPCLI_SESSION": "someone-else"}).out.strip()
        zap("wait", other, "--timeout", "20", check=True)
        assert other not in feed.changes(0.5)
        new = zap.spawn_sh("true")
        seen: set[str] = set()
        wait_until(lambda: new in (seen.__ior__(feed.changes(0.2)) or seen), 10)
        assert other not in seen
        assert feed.every() == {mine, new}
