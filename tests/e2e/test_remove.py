"""`zapcli rm` and `zapcli clean` (#12.15): finished subagents go, with all
their files and markers; running ones are refused."""

from __future__ import annotations

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
