"""The board waits when asked (issue 28 item 7): `board claim --wait SECS`
and the `board` tool's `wait_secs` on an empty board wait for a task to be
added, as their help says — on main they answered "the board has no tasks"
at once."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest


@pytest.mark.timeout(120)
def test_claim_wait_on_an_empty_board_gets_the_task_added_meanwhile(zap):
    started = time.monotonic()
    claimer = subprocess.Popen([sys.executable, "-m", "zapcli", "board", "claim", "--wait", "60"],
                               cwd=zap.cwd, env=zap.env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    time.sleep(2.0)
    assert claimer.poll() is None, claimer.communicate()  # on main: exit 3 at once
    assert zap("board", "add", "write the changelog").out.strip() == "t1"
    out, err = claimer.communicate(timeout=60)
    assert claimer.returncode == 0, err
    assert out.decode().strip() == "t1"
    assert time.monotonic() - started >= 2.0


@pytest.mark.timeout(60)
def test_claim_wait_on_an_empty_board_ends_when_its_time_is_up(zap):
    started = time.monotonic()
    res = zap("board", "claim", "--wait", "2")
    assert res.returncode == 3 and "the board has no tasks" in res.err, res.err
    assert time.monotonic() - started >= 2.0


def test_a_board_whose_tasks_are_all_done_answers_at_once(zap):
    assert zap("board", "add", "one").returncode == 0
    assert zap("board", "claim").out.strip() == "t1"
    assert zap("board", "done", "t1", "--result", "ok").returncode == 0
    started = time.monotonic()
    doc = zap.json("board", "claim", "--wait", "30")
    assert doc["claimed"] is None and doc["finished"] is True
    assert time.monotonic() - started < 20  # finished: no task will come to wait for


@pytest.mark.timeout(120)
def test_the_board_tools_wait_secs_waits_for_a_task_too(zap):
    from zapcli.team import who
    from zapcli.team.tools import board_call

    adder = threading.Timer(2.0, lambda: zap("board", "add", "review the docs"))
    adder.start()
    try:
        started = time.monotonic()
        text = board_call(who.current(), {"action": "claim", "wait_secs": 60})
    finally:
        adder.join()
    assert "t1" in text and "review the docs" in text, text
    assert time.monotonic() - started >= 2.0
