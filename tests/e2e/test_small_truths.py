"""Small truths (issue 28 item 8): a `lost` subagent's "took" is how long it
ran; a task holding a NUL byte is refused at spawn; global flags before the
command work; `doctor` exits 0 for someone who only runs `sh`; a new
terminal's empty `list` says what other sessions hold (a named session's, by
its name)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.conftest import supervisor_pid, wait_until


@pytest.mark.timeout(60)
def test_a_lost_subagents_took_is_how_long_it_ran(zap):
    """On main: `lost (took 1.0s, ...)` for one that ran 6 s: the time of its
    last output, not of its death."""
    sid = zap.spawn_sh("echo started; sleep 100")
    runner = supervisor_pid(zap, sid)
    time.sleep(6)
    os.kill(runner, signal.SIGKILL)
    wait_until(lambda: zap.status(sid) == "lost", 20, 0.3)
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert 4.0 <= doc["elapsed_s"] <= 12.0, doc["elapsed_s"]
    assert "lost (took " in zap("poll", "--no-wait", sid).out


@pytest.mark.parametrize("task", ["echo a\x00rm -rf x", "\x00", "safe\x00"])
def test_a_task_holding_a_nul_byte_is_refused_and_nothing_is_created(zap, task):
    """On main: accepted, recorded as given, and run as the text before the
    NUL (`sh -c` sees a C string) — something other than what was recorded."""
    res = zap("spawn", "--cli", "sh", "-", input=task.encode())
    assert res.returncode == 2, (res.out, res.err)
    assert "NUL" in res.err and "Traceback" not in res.err, res.err
    assert not list(zap.home.glob("subagents/*.jsonl"))
    mcp_like = zap("spawn", "--cli", "sh", "--", "echo a\x01b")  # other controls are text
    assert mcp_like.returncode == 0, mcp_like.err


def test_global_flags_before_the_command_work(zap):
    """On main: `zapcli --json list` was a usage error (No such option)."""
    import json

    spawned = zap("--json", "spawn", "--cli", "sh", "--", "echo --json stays in the task")
    assert spawned.returncode == 0, spawned.err
    sid = json.loads(spawned.stdout)["id"]
    assert zap("wait", sid).returncode == 0
    assert zap("output", sid).out == "--json stays in the task\n"
    res = zap("--json", "list")
    assert res.returncode == 0, res.err
    assert json.loads(res.stdout)["count"] == 1
    assert json.loads(zap("--json", "board", "list").stdout)["tasks"] == []
    assert "Usage" in zap("--json", "--help").out or zap("--json", "--help").returncode == 0


def test_doctor_exits_0_for_someone_who_only_runs_sh(zap):
    """No model configured and none reachable: a note, not a FAIL, unless a
    model backend is asked for."""
    env = {"OPENAI_BASE_URL": "", "ZAPCLI_MODEL": "", "OPENAI_API_KEY": ""}
    res = zap("doctor", env=env)
    assert res.returncode == 0, (res.out, res.err)
    assert "FAIL" not in res.out
    assert "model" in res.out.lower()


def test_an_empty_list_in_a_new_terminal_says_what_other_sessions_hold(zap):
    for n in range(3):
        zap("spawn", "--cli", "sh", "--", f"echo {n}", env={"ZAPCLI_SESSION": "another-terminal"})
    res = zap("list", env={"ZAPCLI_SESSION": "a-new-terminal"})
    assert res.returncode == 0
    assert "3 subagents in other sessions" in res.out, res.out
    assert "zapcli list --all" in res.out and "ZAPCLI_SESSION" in res.out, res.out


def test_an_empty_named_session_is_said_by_its_name_not_as_a_terminal(zap):
    """A new user: with ZAPCLI_SESSION set, an empty `list` still said "each
    terminal is a session of its own" (untrue: every terminal with that name
    shares it). A named session is said by its name; a terminal's own still
    gets the terminal words."""
    import subprocess
    import sys

    zap("spawn", "--cli", "sh", "--", "echo elsewhere", env={"ZAPCLI_SESSION": "another"}, check=True)
    named = zap("list", env={"ZAPCLI_SESSION": "my build"})
    assert named.returncode == 0, named.err
    assert "this one is my build, named by ZAPCLI_SESSION" in named.out, named.out
    assert "ZAPCLI_SESSION='my build' shares this one" in named.out, named.out
    assert "each terminal is a session of its own" not in named.out, named.out
    tool = zap("call", '{"action": "list"}', env={"ZAPCLI_SESSION": "my build"})
    assert "ZAPCLI_SESSION names this session" in tool.out, tool.out
    unnamed = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    derived = subprocess.run([sys.executable, "-m", "zapcli", "list"], env=unnamed, cwd=zap.cwd,
                             capture_output=True, text=True, timeout=60, start_new_session=True)
    assert "(this one is tty-" in derived.stdout, derived.stdout  # a session of its own
    assert "each terminal is a session of its own" in derived.stdout, derived.stdout


def test_doctor_fails_when_the_model_asked_for_is_missing(zap):
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ZAPCLI_MODEL": "", "OPENAI_API_KEY": "k"}
    res = zap("doctor", "--model", "nowhere", env=env)
    assert res.returncode == 1 and "FAIL model" in res.out, res.out
    configured = zap("doctor", env={**env, "ZAPCLI_MODEL": "configured-one"})
    assert configured.returncode == 1 and "FAIL model" in configured.out  # yours, and unreachable
