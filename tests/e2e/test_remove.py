"""`zapcli rm` and `zapcli clean` (#12.15): finished subagents go, with all
their files and markers; running ones are refused."""

from __future__ import annotations

import json

import pytest

from tests.conftest import sleep_marker


@pytest.mark.timeout(60)
def test_rm_removes_finished_ones_and_refuses_running(zap):
    done = zap.spawn_sh("echo bye")
    running = zap.spawn_sh(f"sleep {sleep_marker(60)}")
    assert zap("wait", done).returncode == 0
    res = zap("rm", done[-8:], running)
    assert res.returncode == 1
    assert f"{done}: removed" in res.out and f"{running} is running" in res.out
    assert not list(zap.home.glob(f"subagents/{done}.*"))
    assert not [p for p in zap.home.glob("sessions/*/*/*") if p.name.endswith(done)]
    assert zap.json("list")["count"] == 1
    assert zap("poll", done).returncode == 1
    zap("kill", running, "--grace", "0")


@pytest.mark.timeout(60)
def test_clean_removes_the_sessions_finished_ones(zap):
    ok = zap.spawn_sh("true")
    bad = zap.spawn_sh("exit 4")
    other = zap("spawn", "--cli", "sh", "--", "true", env={"ZAPCLI_SESSION": "elsewhere"}).out.strip()
    zap("wait", ok, bad, other)
    res = zap.json("clean", "--status", "failed")
    assert res["removed"] == [bad]
    assert zap.json("clean")["removed"] == [ok]
    assert zap.trail(other).exists()  # another session's
    assert zap.json("clean", "--all")["removed"] == [other]
    assert zap("clean", "--status", "running").returncode == 2


def test_a_finished_dependency_of_a_queued_subagent_is_kept_until_it_starts(zap):
    """tryout: `clean` removed a completed `--after` dependency of a queued
    subagent, which then failed with "dependency ... ended lost"."""
    zap.env["ZAPCLI_MAX_CONCURRENT"] = "1"
    go = zap.cwd / "go"
    a = zap.spawn_sh("echo A")
    assert zap("wait", "--timeout", "60", a).returncode == 0
    blocker = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done")  # holds the only slot
    b = zap.spawn_sh("echo B-ran", "--after", a)
    assert zap.status(b) == "queued"
    res = zap("rm", a)
    assert res.returncode == 1 and f"the queued {b} waits for it" in res.out
    doc = zap.json("clean")
    assert a not in doc.get("removed", []) and "queued subagent waits for it" in json.dumps(doc)
    go.touch()
    assert zap("wait", "--timeout", "60", b, blocker).returncode == 0
    assert zap("output", b).out == "B-ran\n"
    assert zap("rm", a).returncode == 0  # free to go once its successor started


def test_one_damaged_file_stops_only_its_own_removal(zap):
    """tryout: a folder in place of one subagent's .out made `clean` stop at
    it with an error, leaving the others."""
    ids = [zap.spawn_sh(f"echo {n}") for n in range(3)]
    assert zap("wait", "--timeout", "60", *ids).returncode == 0
    out = zap.trail(ids[1]).with_suffix(".out")
    out.unlink()
    out.mkdir()
    res = zap("clean", "--json")
    doc = json.loads(res.stdout)
    assert sorted(doc["removed"]) == sorted([ids[0], ids[2]])
    assert ids[1] in json.dumps(doc) and "could not be removed" in json.dumps(doc)
