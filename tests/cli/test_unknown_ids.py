"""An id that names no subagent is said the same way by every command (user
trials: `poll` and `kill` said it on stdout, the others on stderr, and
`send` of a well-formed id said "No such file or directory"): one
`zapcli: error: ID does not exist …` line on stderr, exit 1, nothing on
stdout. The commands that answer each id on its own (`poll`, `kill`, `rm`)
still answer the others on stdout, and their --json document keeps the
error in its place; a tool call's text (`zapcli call`) keeps it in place too,
as a tool has no stderr."""

from __future__ import annotations

import json

import pytest

UNKNOWN = {"deadbeef": "deadbeef does not exist (no subagent's id ends in deadbeef)",
           "sa_20260101_deadbeef": "sa_20260101_deadbeef does not exist"}
COMMANDS = [("poll",), ("poll", "--no-wait"), ("kill",), ("rm",), ("wait",), ("output",),
            ("replay",), ("diff",), ("merge",), ("attempts",), ("pick",), ("approve",),
            ("deny",), ("send", "{id}", "hello"), ("continue", "{id}", "hello")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("ident", sorted(UNKNOWN))
def test_every_command_says_an_unknown_id_alike_on_stderr(zap, ident):
    for cmd in COMMANDS:
        args = [a.format(id=ident) for a in cmd] if "{id}" in cmd else [*cmd, ident]
        res = zap(*args)
        assert (res.returncode, res.out, res.err) == (1, "", f"zapcli: error: {UNKNOWN[ident]}\n"), args


@pytest.mark.timeout(60)
def test_poll_kill_and_rm_answer_the_others_on_stdout_and_the_unknown_on_stderr(zap):
    sid = zap.spawn_sh("echo fine")
    assert zap("wait", sid).returncode == 0
    unknown = "sa_20260101_deadbeef"
    for args, answered in ((("poll", unknown, sid), f"{sid}: completed"),
                           (("kill", unknown, sid), f"{sid}: already completed"),
                           (("rm", unknown, sid), f"{sid}: removed")):
        res = zap(*args)
        assert res.returncode == 1 and answered in res.out, (args, res.out)
        assert "does not exist" not in res.out, (args, res.out)
        assert res.err == f"zapcli: error: {unknown} does not exist\n", (args, res.err)
    sid = zap.spawn_sh("echo again")
    assert zap("wait", sid).returncode == 0
    doc = zap.json("poll", unknown, sid)["subagents"]  # --json: the error in its place
    assert doc[0]["error"] == {"code": "not_found", "message": f"{unknown} does not exist"}
    assert doc[1]["status"] == "completed"
    res = zap("call", json.dumps({"action": "poll", "ids": [unknown, sid]}))
    assert res.returncode == 1 and f"{unknown} does not exist" in res.out  # a tool: in place


@pytest.mark.timeout(180)
def test_a_run_id_is_said_as_a_run_and_replay_and_usage_take_it(zap, model):
    """After a `zapcli run` ended, every verb given its id said "run_… does
    not exist (not a subagent id: ids look like sa_…)" though its record
    exists: now each says what it is and what shows it; `replay` shows the
    run's own conversation and `usage RUN` its figures (it was "Got
    unexpected extra argument(s)"). An unknown run id still does not exist."""
    model([{"match": "hello run", "turns": [{"text": "run says hi",
                                              "usage": {"prompt_tokens": 70, "completion_tokens": 5}}]}])
    doc = json.loads(zap("run", "--json", "--", "hello run", timeout=120).stdout)
    run_id = doc["run_id"]
    said = (f"zapcli: error: {run_id} is a `zapcli run`, not a subagent: `zapcli replay {run_id}` "
            f"and `zapcli export {run_id}` show it; its subagents are in session {run_id} "
            f"(ZAPCLI_SESSION={run_id} zapcli list)\n")
    for cmd in COMMANDS:
        if cmd[0] in ("replay", "kill"):
            continue
        args = [a.format(id=run_id) for a in cmd] if "{id}" in cmd else [*cmd, run_id]
        res = zap(*args)
        assert (res.returncode, res.out, res.err) == (1, "", said), args
    ended = zap("kill", run_id)  # kill stops a run by its id (tests/parallel/test_stop.py); this one ended
    assert ended.returncode == 0 and f"{run_id}: already completed" in ended.out, ended.err
    shown = zap("replay", run_id)
    assert shown.returncode == 0 and "run says hi" in shown.out and "hello run" in shown.out, shown
    records = zap.json("replay", run_id)["records"]
    assert records[0]["type"] == "spawn" and records[0]["run"] is True
    assert records[-1]["type"] == "status" and records[-1]["status"] == "completed"
    usage = zap.json("usage", run_id)["sessions"]
    assert [s["session"] for s in usage] == [run_id] and usage[0]["own"]["input_tokens"] == 70, usage
    assert zap.json("usage", run_id) == zap.json("usage", env={"ZAPCLI_SESSION": run_id})
    bad = zap("usage", "sa_20260101_deadbeef")
    assert bad.returncode == 2 and "zapcli poll" in bad.err, bad.err
    gone = "run_20260101_0badc0de"
    for args in (("replay", gone), ("usage", gone), ("poll", gone), ("kill", gone)):
        res = zap(*args)
        assert res.returncode == 1 and f"{gone} does not exist" in res.err, (args, res.err)
