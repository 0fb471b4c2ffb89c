"""A new user's reports (offline, `--cli sh`, from the README and docs):
options that contradicted each other or were taken in part without a word.
`poll --no-wait --wait-secs N` is refused naming both; `list --status`
(and `clean --status`) given more than once takes any of them; kill_grace_s
has one range (0-3600) as `kill --grace`, the variable and the file."""

from __future__ import annotations

import json

import pytest


@pytest.mark.timeout(60)
def test_poll_refuses_no_wait_with_wait_secs_naming_both(zap):
    """Accepted silently before (it checked once, the wait asked for dropped)."""
    sid = zap.spawn_sh("echo hi")
    for args in (("--no-wait", "--wait-secs", "3"), ("--wait-secs", "0", "--no-wait")):
        res = zap("poll", *args, sid)
        assert res.returncode == 2 and res.out == "", (args, res.out)
        assert "--no-wait" in res.err and "--wait-secs" in res.err, res.err
        assert "Traceback" not in res.err
    doc = json.loads(zap("poll", "--json", "--no-wait", "--wait-secs", "3", sid).out)
    assert doc["error"]["code"] == "usage" and doc["error"]["exit_code"] == 2
    tool = zap("call", json.dumps({"action": "poll", "ids": [sid], "no_wait": True, "wait_secs": 3}))
    assert tool.returncode == 2 and "`no_wait` and `wait_secs`" in tool.out, tool.out
    assert zap("poll", "--no-wait", sid).returncode == 0  # either alone still works
    assert zap("poll", "--wait-secs", "1", sid).returncode == 0


@pytest.mark.timeout(90)
def test_list_takes_every_status_given_and_the_text_and_json_agree(zap):
    """`list --status failed --status timeout` listed only the timed-out one
    (the last --status given won, without a word)."""
    failed = zap.spawn_sh("exit 1")
    timed_out = zap.spawn_sh("sleep 30", timeout=1)
    done = zap.spawn_sh("true")
    assert [zap.wait_status(s) for s in (failed, timed_out, done)] == ["failed", "timeout", "completed"]
    args = ("list", "--status", "failed", "--status", "timeout")
    doc = zap.json(*args)
    assert {s["id"] for s in doc["subagents"]} == {failed, timed_out}, doc["subagents"]
    text = zap(*args)
    assert text.returncode == 0, text.err
    assert "2 subagents in this session with status failed or timeout" in text.out, text.out
    assert failed[-8:] in text.out and timed_out[-8:] in text.out and done[-8:] not in text.out
    assert zap("list", "--status", "failed", "--status", "failed").out.count(failed[-8:]) == 1
    bad = zap("list", "--status", "failed", "--status", "nope")
    assert bad.returncode == 2 and "unknown --status 'nope'" in bad.err, bad.err
    assert "repeat" in zap("list", "--help").out
    cleaned = zap.json("clean", "--status", "failed", "--status", "timeout")  # clean's filter alike
    assert set(cleaned["removed"]) == {failed, timed_out}, cleaned
    assert [s["id"] for s in zap.json("list")["subagents"]] == [done]


@pytest.mark.timeout(60)
def test_kill_grace_has_one_range_for_the_option_the_variable_and_the_file(zap):
    """`ZAPCLI_KILL_GRACE_S=99999` was taken (a kill could wait 28 hours
    between SIGTERM and SIGKILL) while `kill --grace 99999` was refused."""
    refused = zap("spawn", "--cli", "sh", "--", "true", env={"ZAPCLI_KILL_GRACE_S": "99999"})
    assert refused.returncode != 0 and refused.out == "", refused.out
    assert "ZAPCLI_KILL_GRACE_S" in refused.err and "3600" in refused.err, refused.err
    assert not list(zap.home.glob("subagents/*.jsonl"))  # nothing spawned
    (zap.home.parent / "config").mkdir(exist_ok=True)
    (zap.home.parent / "config" / "config.yaml").write_text("kill_grace_s: 99999\n")
    in_file = zap("spawn", "--cli", "sh", "--", "true")
    assert in_file.returncode != 0 and "kill_grace_s" in in_file.err and "3600" in in_file.err
    (zap.home.parent / "config" / "config.yaml").unlink()
    edge = zap("spawn", "--cli", "sh", "--", "true", env={"ZAPCLI_KILL_GRACE_S": "3600"})
    assert edge.returncode == 0, edge.err  # the edge itself, as kill --grace 3600
    assert zap("kill", "--grace", "3600", edge.out.strip()).returncode == 0
    over = zap("kill", "--grace", "3601", edge.out.strip())
    assert over.returncode == 2 and "between 0 and 3600" in over.err


def test_a_task_read_from_a_terminal_says_so_first_and_ends_at_ctrl_d(zap):
    """New user (round 4): `spawn --cli sh -` at a terminal waited on stdin
    with no word, as if hung. At a terminal it says it reads the task and how
    to end it; from a pipe it says nothing (scripts' stderr stays clean)."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import time

    main, tty = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "spawn", "--cli", "sh", "-"],
                            stdin=tty, stderr=tty, stdout=subprocess.PIPE, cwd=zap.cwd, env=zap.env)
    os.close(tty)
    said, end = b"", time.monotonic() + 30
    while b"Ctrl-D" not in said and time.monotonic() < end:
        if select.select([main], [], [], 0.2)[0]:
            said += os.read(main, 4096)
    assert b"reading the task from standard input; end it with Ctrl-D" in said, said
    os.write(main, b"echo from-the-terminal\n\x04")
    out, _ = proc.communicate(timeout=60)
    os.close(main)
    sid = out.decode().strip()
    assert proc.returncode == 0 and sid.startswith("sa_"), out
    zap("wait", sid, "--timeout", "30", check=True)
    assert zap("output", sid).out == "from-the-terminal\n"
    piped = zap("spawn", "--cli", "sh", "-", input="echo piped")
    assert piped.returncode == 0 and piped.err == ""


def test_a_workspace_setting_not_applied_is_a_warning_in_doctor_not_a_failure(zap):
    """New user (round 4): a trusted workspace whose `approval: full` is not
    applied (spawn goes on without it, and says so) made `doctor` FAIL and
    exit 1 for good. It is a warning: named, exit 0."""
    (zap.cwd / ".zapcli").mkdir()
    (zap.cwd / ".zapcli" / "config.yaml").write_text("approval: full\n")
    zap("trust", check=True)
    res = zap("doctor")
    line = next(ln for ln in res.out.splitlines() if ln.split()[1:2] == ["config:"])
    assert line.startswith("WARN config: 1 workspace setting(s) not applied"), res.out
    assert "`approval: full`" in res.out and res.returncode == 0, (res.returncode, res.out)
