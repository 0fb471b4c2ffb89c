"""A subagent that is terminal or lost works the board no more (issue 30
item 4, C44): whatever of it is left running — its team MCP server, its
agent CLI whose runner was SIGKILLed (B44), a process of its work that
outlived it — is refused every board and message call, and nothing it
asks for happens: no claim, no task added, nothing done or released, no
message delivered. A refused call about a task is in that task's history.

- the team MCP server process left alive after its runner was SIGKILLed
  (the server is this test's child, so nothing the observer ends reaches
  it): each board action and each message action is refused, naming how
  the subagent ended;
- a finished subagent's leftover process calling `zapcli board` and
  `zapcli send` with its marker;
- a real Claude Code whose runner was SIGKILLed while it kept running:
  its next board call (a claim) through its team server is refused.
"""

from __future__ import annotations

import os
import signal
import sys

import pytest
from mcp import Client, StdioServerParameters

from tests.backends import clitest as ct
from tests.conftest import trail_records, wait_until
from tests.mcp.conftest import run, text
from zapcli.testing.server import ScriptedServer

ZAP = f"{sys.executable} -m zapcli"


def _board(zap):
    return {t["id"]: t for t in zap.json("board", "list")["tasks"]}


def _show(zap, tid):
    return zap.json("board", "show", tid)["events"]


def _runner(zap, sid):
    return next(r for r in trail_records(zap.trail(sid)) if r["type"] == "process")["pid"]


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _steers(zap, sid):
    return [r for r in trail_records(zap.trail(sid)) if r["type"] == "steer"]


def test_the_team_server_of_a_lost_subagent_refuses_every_call(zap, model):
    model([{"match": "LISTENER", "turns": [{"delay_s": 120, "text": "done listening"}]}])
    for text_ in ("parse", "lex", "emit"):
        zap("board", "add", f"write the {text_} stage", check=True)
    listener = zap("spawn", "--", "LISTENER wait for messages").out.strip()
    holder = zap.spawn_sh("sleep 300", timeout=300)
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "zapcli.mcpserver.team", "--id", holder], env=dict(zap.env), cwd=str(zap.cwd))
    calls = [("board", {"action": "list"}), ("board", {"action": "show", "task": "t1"}),
             ("board", {"action": "add", "text": "planted by a lost holder"}),
             ("board", {"action": "claim", "task": "t2"}), ("board", {"action": "claim"}),
             ("board", {"action": "done", "task": "t1", "result": "late result"}),
             ("board", {"action": "release", "task": "t1"}),
             ("message", {"action": "list"}), ("message", {"action": "read"}),
             ("message", {"action": "send", "to": listener, "text": "from beyond"})]

    async def go():
        async with Client(params) as team:
            got = await team.call_tool("board", {"action": "claim", "task": "t1"})
            assert not got.is_error, text(got)
            runner = _runner(zap, holder)
            os.killpg(runner, signal.SIGKILL)  # runner and its work; the server is ours
            wait_until(lambda: _gone(runner), 10, 0.05)
            return [(name, args, await team.call_tool(name, args)) for name, args in calls]

    answers = run(go)
    for name, args, res in answers:
        assert res.is_error and f"{holder}" in text(res) and "ended lost" in text(res), (
            name, args, text(res))
        assert "Messages for you" not in text(res)
    board = _board(zap)
    assert list(board) == ["t1", "t2", "t3"], board  # nothing added
    assert board["t1"]["state"] == "open" and board["t1"]["result"] is None  # given back, not done
    assert board["t2"]["state"] == "open" and board["t3"]["state"] == "open"
    t2 = _show(zap, "t2")
    assert [e["what"] for e in t2] == ["added", "refused"], t2
    assert t2[1]["who"].startswith(holder) and "ended lost" in t2[1]["note"], t2
    t1 = [e["what"] for e in _show(zap, "t1")]
    assert "done" not in t1 and t1[:3] == ["added", "claimed", "released"], t1
    assert _steers(zap, listener) == []  # no message delivered
    assert zap.status(holder) == "lost"


def test_a_finished_subagents_leftover_process_is_refused(zap, model):
    model([{"match": "LISTENER", "turns": [{"delay_s": 120, "text": "done listening"}]}])
    zap("board", "add", "first", check=True)
    zap("board", "add", "second", check=True)
    quitter = zap.spawn_sh(f"{ZAP} board claim t1")
    assert zap("wait", quitter, "--timeout", "60").returncode == 0
    other = zap("spawn", "--", "LISTENER wait for messages").out.strip()
    marker = {"ZAPCLI_SUBAGENT_ID": quitter}  # a process its work left behind
    for args in (("board", "claim"), ("board", "claim", "t2"), ("board", "list"),
                 ("board", "add", "planted"), ("board", "done", "t1", "--result", "late"),
                 ("send", other, "hello")):
        res = zap(*args, env=marker)
        assert res.returncode == 1 and "ended completed" in res.err, (args, res.returncode, res.err)
        assert "Traceback" not in res.err
    board = _board(zap)
    assert list(board) == ["t1", "t2"] and all(t["state"] == "open" for t in board.values()), board
    assert "claimed" not in [e["what"] for e in _show(zap, "t2")]
    assert _steers(zap, other) == []


WORKER = """name: worker
description: works the session's task board
cli: claude
team: true
tools: []
prompt: |
  You are one worker of a team: claim a task from the board, do it, mark it done.
"""


@pytest.mark.xdist_group("agent-clis")
def test_claude_whose_runner_was_sigkilled_is_refused_its_next_claim(zap, tmp_path):
    board = {"name": "mcp__zapcli_team__board"}
    script = [{"match": "B44-CLAUDE", "turns": [
        {"tool_calls": [{**board, "arguments": {"action": "claim", "task": "t1"}}]},
        # held until its runner is SIGKILLed; Claude Code keeps running
        {"hold": "runner gone",
         "tool_calls": [{**board, "arguments": {"action": "claim", "task": "t2"}}]},
        {"text": "never reached: refused and ended"}]}]
    ct.configure(zap, "claude")
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    (folder / "worker.yml").write_text(WORKER)
    zap("trust", check=True)  # a workspace's own definitions count once the person trusts them
    zap("board", "add", "first", check=True)
    zap("board", "add", "second", check=True)
    with ScriptedServer(script, protocol="anthropic") as srv:
        sid = ct.spawn(zap, "claude", "B44-CLAUDE work the board",
                       ct.cli_env("claude", srv, tmp_path / "h"), "--agent", "worker",
                       # unsandboxed, its team server is its own child and outlives the runner
                       # (B44); sandboxed, the server sits behind the runner's relay and goes too
                       "--no-sandbox")
        wait_until(lambda: _board(zap)["t1"]["holder"] == sid, 90, 0.1)
        runner = _runner(zap, sid)
        os.kill(runner, signal.SIGKILL)  # the runner only: its CLI goes on (B44)
        wait_until(lambda: _gone(runner), 10, 0.05)
        assert ct.marked(sid), "Claude Code should outlive its runner here"
        srv.release("runner gone")
        wait_until(lambda: len(srv.requests) >= 2, 60, 0.1)  # it was handed the second claim
        wait_until(lambda: not ct.marked(sid), 90, 0.2)  # refused, and what is left is ended
    t2 = _show(zap, "t2")
    assert "claimed" not in [e["what"] for e in t2], (t2, ct.dump(zap, sid))
    assert [e["what"] for e in t2] == ["added", "refused"], t2
    assert t2[1]["who"].startswith(sid) and "ended lost" in t2[1]["note"], t2
    assert zap.status(sid) == "lost"
    assert _board(zap)["t1"]["state"] == "open"
