"""A `wait` survives `rm` / `clean` / `gc` of what it waits on (issue 28
item 3): another terminal's `zapcli clean` must not make `zapcli wait A B`
fail while B runs. A removed subagent counts by the end it had; one removed
before it ended is said, and the others are still waited for."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest

from tests.conftest import sleep_marker, wait_until


def _wait_in_background(zap, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "zapcli", "wait", *args], cwd=zap.cwd,
                            env=zap.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _gone(zap, sid: str) -> bool:
    return not zap.trail(sid).exists()


@pytest.mark.timeout(120)
def test_clean_in_another_terminal_does_not_break_a_wait(zap):
    """On main: `wait A B` exited 1 with "A does not exist" the moment
    another terminal's `clean` removed the finished A, while B still ran."""
    go = zap.cwd / "go"
    a = zap.spawn_sh("echo A-done")
    b = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done; echo B-done")
    assert zap("wait", a).returncode == 0
    waiter = _wait_in_background(zap, "--json", a, b)
    time.sleep(1.5)  # the wait has seen A ended and waits for B
    assert zap.json("clean")["removed"] == [a]  # "another terminal": B runs, so only A goes
    time.sleep(1.0)  # the wait looks again at least once with A gone
    assert waiter.poll() is None, waiter.communicate()
    go.touch()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, (out, err)
    doc = json.loads(out)
    by_id = {s["id"]: s for s in doc["subagents"]}
    assert by_id[a]["status"] == "completed" and by_id[a]["removed"] is True
    assert by_id[b]["status"] == "completed" and by_id[b]["removed"] is False
    assert b"does not exist" not in err


@pytest.mark.timeout(120)
def test_a_removed_failure_counts_as_the_failure_it_was(zap):
    go = zap.cwd / "go"
    bad = zap.spawn_sh("exit 5")
    b = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done")
    zap("wait", bad)
    waiter = _wait_in_background(zap, bad, b)
    time.sleep(1.0)
    assert zap("rm", bad).returncode == 0
    go.touch()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 3, (out, err)  # not completed: as if it were still there
    text = out.decode()
    assert f"{bad}: failed" in text and "by rm, clean or gc)" in text, text


@pytest.mark.timeout(120)
def test_one_removed_before_it_ended_is_said_and_the_rest_awaited(zap):
    """A trail deleted while its subagent ran (by hand, or `rm` of a damaged
    one): the wait says so and goes on waiting for the others."""
    go = zap.cwd / "go"
    lost = zap.spawn_sh(f"sleep {sleep_marker(60)}")
    b = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done; echo B")
    waiter = _wait_in_background(zap, "--json", lost, b)
    time.sleep(1.0)
    pid = json.loads(zap.trail(lost).read_text().splitlines()[1]).get("pid")
    for path in zap.home.glob(f"subagents/{lost}.*"):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()  # its files are gone before it ended
    time.sleep(1.0)
    assert waiter.poll() is None, waiter.communicate()  # B is still awaited
    go.touch()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 3, (out, err)
    doc = json.loads(out)
    by_id = {s["id"]: s for s in doc["subagents"]}
    assert by_id[b]["status"] == "completed"
    gone = by_id[lost]
    assert gone["removed"] is True and gone["terminal"] is True
    assert "removed before it ended" in gone["reason"], gone
    if isinstance(pid, int):
        import os
        import signal

        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.timeout(300)
def test_wait_on_50_finished_after_clean_of_10_exits_0(zap):
    """Issue 28's measure: `wait` on 50 finished subagents after `clean` of 10
    of them (in the session that held those 10) exits 0."""
    others = {"ZAPCLI_SESSION": zap.env["ZAPCLI_SESSION"] + "-b"}
    kept = [zap.spawn_sh(f"echo {n}") for n in range(40)]
    cleaned = [zap("spawn", "--cli", "sh", "--", f"echo c{n}", env=others).out.strip()
               for n in range(10)]
    assert all(s.startswith("sa_") for s in cleaned)
    assert zap("wait", "--timeout", "120", *kept).returncode == 0
    assert zap("wait", "--timeout", "120", *cleaned, env=others).returncode == 0
    assert sorted(zap.json("clean", env=others)["removed"]) == sorted(cleaned)
    wait_until(lambda: all(_gone(zap, s) for s in cleaned), 10)
    res = zap("wait", "--timeout", "60", *kept, *cleaned)
    assert res.returncode == 0, (res.out, res.err)
    assert res.out.count("by rm, clean or gc)") == 10, res.out


# every command that looks up one id (as in tests/cli/test_unknown_ids.py)
ONE_ID = [("poll",), ("poll", "--no-wait"), ("kill",), ("rm",), ("output",), ("replay",),
          ("diff",), ("merge",), ("attempts",), ("pick",), ("approve",), ("deny",),
          ("export",), ("worktree", "rm"), ("send", "{id}", "hello"), ("continue", "{id}", "hello")]


@pytest.mark.timeout(180)
def test_every_command_says_a_removed_id_was_removed_and_when(zap):
    """A new user: `poll`, `output` and `replay` of an id `rm` removed said
    only "does not exist" while `wait` said "removed since: rm, clean or
    gc". Each says it the same way now, from the removal note: when, by
    what, and how it had ended — by its whole id or its 8-hex tail."""
    import re

    sids = {how: zap.spawn_sh(f"echo {how}") for how in ("rm", "clean")}
    assert zap("wait", *sids.values()).returncode == 0
    assert zap("rm", sids["rm"]).returncode == 0
    assert zap("clean").returncode == 0
    assert all(_gone(zap, s) for s in sids.values())
    for sid in sids.values():
        waited = zap("wait", sid)
        found = re.search(r"\((removed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by rm, clean or gc)\)",
                          waited.out)
        assert waited.returncode == 0 and found, waited.out
        said = f"{found.group(1)}; it had ended: completed"
        for ident in (sid, sid[-8:]):
            for cmd in ONE_ID:
                args = [a.format(id=ident) for a in cmd] if "{id}" in cmd else [*cmd, ident]
                res = zap(*args)
                assert res.returncode == 1 and said in res.err, (args, res.returncode, res.err)
                assert res.out == "" and "Traceback" not in res.err, (args, res.out)
        doc = zap.json("poll", sid)["subagents"][0]  # --json: the same words in its place
        assert doc["error"]["message"] == f"{sid} does not exist: {said}", doc


def test_an_id_that_never_existed_is_still_refused(zap):
    res = zap("wait", "sa_20200101_deadbeef")
    assert res.returncode == 1 and "does not exist" in res.err


def test_gc_notes_what_it_removes_and_sweeps_notes_a_week_old(zap, tmp_path):
    import os

    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.yaml").write_text("max_kept: 1\n")
    first = zap.spawn_sh("exit 2")
    assert zap("wait", first).returncode == 3
    second = zap.spawn_sh("true")
    assert zap("wait", second).returncode == 0
    zap.json("gc")  # (retention may have run already, when the second ended)
    assert not zap.trail(first).exists() and zap.trail(second).exists()
    res = zap.json("wait", first)
    assert res["subagents"][0]["status"] == "failed" and res["subagents"][0]["exit_code"] == 2
    assert res["exit_code"] == 3 and res["subagents"][0]["removed"] is True
    note = zap.home / "removed" / f"{first}.json"
    assert oct(note.stat().st_mode & 0o777) == "0o600"
    week = 8 * 86400
    os.utime(note, (note.stat().st_atime - week, note.stat().st_mtime - week))
    zap.json("gc")
    assert not note.exists()
    assert zap("wait", first).returncode == 1  # nothing says what it was any more
