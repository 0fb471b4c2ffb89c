"""`zapcli mcp serve` on stdio, driven by the official `mcp` SDK client: every
tool, with the text compared to the CLI's, progress while waiting, errors as
tool errors, approvals through the approve/deny tools (a client without
elicitation) and as elicitations (accept / decline), one session per connection."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.conftest import wait_until
from tests.mcp.conftest import bash_script, run, server_params, text
from zapcli.toolapi.schema import action_schema
from zapcli.toolapi.spec import ACTIONS


def test_every_tool_over_stdio_says_what_the_cli_says(zap, model):
    model([{"match": "say hello", "turns": [{"text": "hello from the agent"}]},
           {"match": "slow steer", "turns": [{"text": "first", "delay_s": 3}, {"text": "second"}]}])
    notes: list[str] = []

    async def go():
        async with Client(server_params(zap, "mcp-t1")) as c:
            listed = (await c.list_tools()).tools
            assert [t.name for t in listed] == [a.name for a in ACTIONS]
            assert all(t.input_schema == action_schema(a) for t, a in zip(listed, ACTIONS, strict=True))
            sh = (await c.call_tool("spawn", {"task": "sleep 1.5; echo from-sh", "cli": "sh"}))
            sh_id = sh.structured_content["id"]
            agent = await c.call_tool("spawn", {"task": "say hello"})
            agent_id = agent.structured_content["id"]
            assert text(agent).startswith(f"[SubAgent] {agent_id}: ")

            async def progress(p, total, message):
                notes.append(message)

            waited = await c.call_tool("wait", {"ids": [sh_id, agent_id], "timeout": 60},
                                       progress_callback=progress)
            assert not waited.is_error and waited.structured_content["exit_code"] == 0
            polled = await c.call_tool("poll", {"ids": [sh_id], "no_wait": True})
            out = await c.call_tool("output", {"id": agent_id})
            replay = await c.call_tool("replay", {"id": sh_id})
            listing = await c.call_tool("list", {"all": None, "status": None})
            usage = await c.call_tool("usage", {})
            steer_id = (await c.call_tool("spawn", {"task": "slow steer"})).structured_content["id"]
            sent = await c.call_tool("send", {"id": steer_id, "text": "also say bye"})
            sleeper = (await c.call_tool("spawn", {"task": "sleep 60", "cli": "sh"})).structured_content["id"]
            killed = await c.call_tool("kill", {"ids": [sleeper], "grace": 1})
            bad = await c.call_tool("poll", {"ids": [sh_id], "wait_secs": 31})
            worse = await c.call_tool("spawn", {"task": "x", "cli": "nope"})
            alive = await c.call_tool("list", {})
            return (waited, polled, out, replay, listing, usage, sent, killed, bad, worse, alive,
                    sh_id, agent_id, sleeper)

    (waited, polled, out, replay, listing, usage, sent, killed, bad, worse, alive,
     sh_id, agent_id, sleeper) = run(go)
    assert notes and "still running" in notes[0]
    assert "from-sh" in text(waited) and "hello from the agent" in text(waited)
    cli = {"env": {"ZAPCLI_SESSION": "mcp-t1"}}
    assert text(polled) == zap("poll", "--no-wait", sh_id, **cli).out.rstrip("\n")
    assert text(out) == zap("output", agent_id, **cli).out
    assert text(replay) == zap("replay", sh_id, **cli).out.rstrip("\n")
    assert text(usage) == zap("usage", **cli).out.rstrip("\n")
    # the compact table: an id's 8-hex tail stands for it everywhere
    assert sh_id[-8:] in text(listing) and "completed" in text(listing)
    assert agent_id[-8:] in text(listing)
    assert "action replay shows when" in text(sent) and "zapcli replay" not in text(sent)
    assert f"{sleeper}: cancelled" in text(killed)
    assert bad.is_error and "`wait_secs` must be between 0 and 30" in text(bad)
    # spawn itself checks a backend name (a plugin's or a config.yaml wrapper's are names too)
    assert worse.is_error and "unknown backend 'nope' for `cli`; choose one of: zapcli, sh" in text(worse)
    assert not alive.is_error  # the server answered bad input and kept serving


def test_approvals_without_elicitation_go_through_the_approve_and_deny_tools(zap, model):
    model(bash_script("gated", commands=2))

    async def go():
        async with Client(server_params(zap)) as c:
            sid = (await c.call_tool("spawn", {"task": "gated job"})).structured_content["id"]
            # wait returns as soon as the request is made (nothing else would decide it)
            first = await c.call_tool("wait", {"ids": [sid], "timeout": 60})
            approved = await c.call_tool("approve", {"id": sid})
            second = await c.call_tool("poll", {"ids": [sid], "wait_secs": 30})
            denied = await c.call_tool("deny", {"id": sid, "reason": "not that one"})
            done = await c.call_tool("wait", {"ids": [sid], "timeout": 30})
            return sid, first, approved, second, denied, done

    sid, first, approved, second, denied, done = run(go)
    assert "waiting stopped: an approval request needs your decision" in text(first)
    assert f"Decide: action approve or deny with id {sid} and req r1" in text(first)
    assert first.structured_content["subagents"][0]["pending_approval"]["tool"] == "bash"
    assert first.structured_content["exit_code"] == 4  # the wait stopped before it ended
    assert "Awaiting approval r2" in text(second)
    assert "zapcli approve" not in text(first)
    assert "approved r1" in text(approved) and "denied r2" in text(denied)
    assert f"{sid}: completed" in text(done)
    assert (zap.cwd / "out.txt").read_text() == "gated0\n"
    results = [r for r in zap.json("replay", sid)["records"] if r["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [True, False] and "not that one" in results[1]["content"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_approvals_reach_a_client_that_elicits(zap, model, mode):
    """2026-07-28 (auto): an InputRequiredResult the client answers; legacy: an
    elicitation request on the connection. Accept approves, decline denies."""
    import mcp_types as types

    model(bash_script(f"elicit{mode}", commands=2))
    asked: list[str] = []

    async def answer(context, params):
        asked.append(params.message)
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="decline", content={"reason": "declined in the test"})

    async def go():
        async with Client(server_params(zap), elicitation_callback=answer, mode=mode) as c:
            sid = (await c.call_tool("spawn", {"task": f"elicit{mode} job"})).structured_content["id"]
            done = await c.call_tool("wait", {"ids": [sid], "timeout": 60})
            return sid, done

    sid, done = run(go)
    assert len(asked) == 2 and sid in asked[0] and "bash" in asked[0]
    assert f"{sid}: completed" in text(done)
    assert (zap.cwd / "out.txt").read_text() == f"elicit{mode}0\n"
    decisions = [r for r in zap.json("replay", sid)["records"] if r["type"] == "approval_decision"]
    assert [d["decision"] for d in decisions] == ["approve", "deny"]
    assert decisions[1]["reason"] == "declined in the test"


def test_each_connection_is_its_own_session(zap):
    async def spawn_one(tag):
        async with Client(server_params(zap)) as c:
            res = await c.call_tool("spawn", {"task": f"echo {tag}", "cli": "sh"})
            listed = await c.call_tool("list", {})
            return res.structured_content["id"], listed.structured_content["subagents"]

    a, seen_a = run(spawn_one, "a")
    b, seen_b = run(spawn_one, "b")
    assert [s["id"] for s in seen_a] == [a] and [s["id"] for s in seen_b] == [b]
    # the subagents outlive their connection and stay visible everywhere by id
    wait_until(lambda: zap.status(a) == "completed" and zap.status(b) == "completed", 20)


def test_an_unanswered_elicitation_does_not_hold_the_wait_past_its_timeout(zap, model):
    """Legacy era: the question goes out while the wait goes on (progress
    keeps flowing); the wait's own timeout ends the call and the request stays
    pending for the approve tool."""
    import time

    import anyio

    model(bash_script("unanswered"))
    asked: list[float] = []
    notes: list[float] = []

    async def never(context, params):
        asked.append(time.monotonic())
        await anyio.sleep_forever()

    async def progress(p, total, message):
        notes.append(time.monotonic())

    async def go():
        async with Client(server_params(zap), elicitation_callback=never, mode="legacy") as c:
            sid = (await c.call_tool("spawn", {"task": "unanswered job"})).structured_content["id"]
            with anyio.fail_after(30):
                waited = await c.call_tool("wait", {"ids": [sid], "timeout": 8},
                                           progress_callback=progress)
            approved = await c.call_tool("approve", {"id": sid})
            done = await c.call_tool("wait", {"ids": [sid], "timeout": 30})
            return sid, waited, approved, done

    sid, waited, approved, done = run(go)
    assert len(asked) == 1 and waited.structured_content["timed_out"] is True
    assert waited.structured_content["exit_code"] == 4
    assert waited.structured_content["subagents"][0]["pending_approval"]["tool"] == "bash"
    assert sum(1 for t in notes if t > asked[0]) >= 3  # progress after the question went out
    assert "approved r1" in text(approved) and f"{sid}: completed" in text(done)


def test_a_late_answer_in_the_2026_era_does_not_restart_the_wait(zap, model):
    """2026-07-28: the question is an InputRequiredResult and the client calls
    again with the answer; the retried wait gets what is left of its timeout,
    not a fresh one (the decision still counts)."""
    import anyio
    import mcp_types as types

    model(bash_script("late", commands=2))
    asked: list[str] = []

    async def late(context, params):
        asked.append(params.message)
        await anyio.sleep(3.5)  # the user answers after the wait's 3 s timeout
        return types.ElicitResult(action="accept", content={})

    async def go():
        async with Client(server_params(zap), elicitation_callback=late, mode="auto") as c:
            sid = (await c.call_tool("spawn", {"task": "late job"})).structured_content["id"]
            # the question is pending before the 3 s wait starts (a loaded machine's
            # start-up is not what this test measures)
            await anyio.to_thread.run_sync(lambda: wait_until(
                lambda: zap.json("poll", "--no-wait", sid)["subagents"][0]["pending_approval"],
                timeout=60, interval=0.3))
            waited = await c.call_tool("wait", {"ids": [sid], "timeout": 3})
            return sid, waited

    sid, waited = run(go)
    assert len(asked) == 1 and waited.structured_content["timed_out"] is True, text(waited)
    decisions = [r for r in zap.json("replay", sid)["records"] if r["type"] == "approval_decision"]
    assert [d["decision"] for d in decisions] == ["approve"]


def test_unknown_tool_is_a_protocol_error_a_missing_id_says_not_found(zap):
    """#24.3: a tool that does not exist is the JSON-RPC error -32602 naming the
    tool (both eras), not a tool result; an id that does not exist is
    `structuredContent.error` "not_found", the code `--json` has. #24.4: a
    connection whose session is empty hears of the other sessions' subagents."""
    from mcp.shared.exceptions import MCPError

    zap.spawn_sh("true")  # in the test's session, not the connection's

    async def go(mode):
        async with Client(server_params(zap), mode=mode) as c:
            with pytest.raises(MCPError) as unknown:
                await c.call_tool("nope", {})
            polled = await c.call_tool("poll", {"ids": ["0badc0de"], "no_wait": True})
            out = await c.call_tool("output", {"id": "0badc0de"})
            killed = await c.call_tool("kill", {"ids": ["0badc0de"]})
            listed = await c.call_tool("list", {})
            return unknown.value, polled, out, killed, listed

    for mode in ("auto", "legacy"):
        unknown, polled, out, killed, listed = run(go, mode)
        assert unknown.error.code == -32602 and "unknown tool 'nope'" in unknown.error.message
        assert "spawn" in unknown.error.message  # what exists
        cli = zap.json("poll", "--no-wait", "0badc0de")["subagents"][0]["error"]["code"]
        for res in (polled, out, killed):
            assert res.is_error and res.structured_content["error"] == cli == "not_found", res
        assert not listed.is_error and "0 subagents in this session" in text(listed)
        assert "1 subagent in other sessions" in text(listed)
        assert "action list with all: true shows them" in text(listed)
