"""C22: MCP hosts end a tools/call after about a minute and drop its result.
zapcli's poll and wait over MCP answer by a server-side cap (40 s; 3 s here
through ZAPCLI_MCP_WAIT_CAP_S) with an ordinary "still running" result, never
an error, while progress notifications flow; a client that cancels a wait
never stops the subagent. Over stdio in both protocol eras (a 2026-07-28
client and a legacy one) and over streamable HTTP, with the official SDK
client."""

from __future__ import annotations

import re

import anyio
import pytest
from mcp import Client

from tests.mcp.conftest import http_client, run, server_params, text, token_of
from tests.mcp.test_mcp_http_agents import _port, _serve_http

CAP_S = 3
GUARD_S = 25  # far below the 30 s the subagent sleeps: only a cap answers in time


@pytest.mark.parametrize(("transport", "mode"), [("stdio", "auto"), ("stdio", "legacy"),
                                                 ("http", "auto")])
def test_wait_and_poll_answer_still_running_at_the_cap_and_a_cancel_spares_the_work(
        zap, transport, mode):
    zap.env["ZAPCLI_MCP_WAIT_CAP_S"] = str(CAP_S)
    proc = None
    if transport == "http":  # the locked server: the client sends its token
        port = _port()
        proc = _serve_http(zap, port)
        url, token = f"http://127.0.0.1:{port}/mcp", token_of(zap, port)

        def client() -> Client:
            return http_client(url, token, mode=mode)  # type: ignore[no-any-return]
    else:
        def client() -> Client:
            return Client(server_params(zap, "c22-" + mode), mode=mode)
    notes: list[str] = []

    async def progress(p, total, message):
        notes.append(message)

    async def go():
        async with client() as c:
            sid = (await c.call_tool("spawn", {"task": "sleep 30", "cli": "sh"})).structured_content["id"]
            with anyio.fail_after(GUARD_S):
                waited = await c.call_tool("wait", {"ids": [sid], "timeout": 600},
                                           progress_callback=progress)
                polled = await c.call_tool("poll", {"ids": [sid], "wait_secs": 30})
            heard = len(notes)
            with anyio.move_on_after(2.5):  # the client gives up on a wait of its own accord
                await c.call_tool("wait", {"ids": [sid]}, progress_callback=progress)
            after = await c.call_tool("poll", {"ids": [sid], "no_wait": True})
            return sid, waited, polled, heard, after

    try:
        sid, waited, polled, heard, after = run(go)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
    assert not waited.is_error, text(waited)
    assert waited.structured_content["still_running"] is True
    assert waited.structured_content["exit_code"] == 4  # as docs/reference/exit-codes.md says
    assert waited.structured_content["subagents"][0]["status"] == "running"
    assert f"still running after {CAP_S}s" in text(waited) and "wait again with timeout" in text(waited)
    # and says the time it waited, not 0.0s (a new user's trial)
    said = re.search(r"still running \(waited ([0-9.]+)s\)", text(waited))
    assert said and float(said.group(1)) >= CAP_S - 0.5, text(waited)
    assert heard >= 1 and "still running" in notes[0]  # progress while it blocked
    assert not polled.is_error and polled.structured_content["subagents"][0]["status"] == "running"
    # the cancelled wait left the subagent alone, and the server kept serving
    assert not after.is_error and after.structured_content["subagents"][0]["status"] == "running"
    assert zap.status(sid) == "running"
    zap("kill", sid)
