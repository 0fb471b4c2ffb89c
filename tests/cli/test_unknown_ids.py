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
