"""`zapcli continue` with the built-in agent against the scripted server (SPEC §16)."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request

from tests.conftest import record_of, sleep_marker, supervisor_pid, trail_records, wait_until
from zapcli.testing import ScriptedServer


def _id(zap, *args: str) -> str:
    """Run a command that prints a new subagent's id (spawn, continue); the id."""
    proc = zap(*args)
    assert proc.returncode == 0, proc.err
    return proc.out.strip()


def test_continue_carries_the_conversation_and_the_tree(zap, repo, model):
    srv = model([{"match": "make a draft", "turns": [
        {"text": "Writing it.", "tool_calls": [{"name": "write", "arguments": {
            "path": "draft.txt", "content": "first draft\n"}}]},
        {"text": "Wrote draft.txt."},
        {"tool_calls": [{"name": "read", "arguments": {"path": "draft.txt"}}]},
        {"text": "It says: first draft."}]}])
    old = _id(zap, "spawn", "--agent", "fixer", "--worktree", "--", "make a draft")
    assert zap("wait", "--timeout", "30", old).returncode == 0
    n_before = len(srv.requests)
    new = _id(zap, "continue", old, "now read it back")
    assert zap("wait", "--timeout", "30", new).returncode == 0, zap("replay", new).out

    first = srv.requests[n_before]["messages"]  # the new subagent's first model request
    roles = [m["role"] for m in first]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert first[1]["content"] == "make a draft"
    assert first[2]["content"] == "Writing it." and first[2]["tool_calls"][0]["function"]["name"] == "write"
    assert first[3]["tool_call_id"] == first[2]["tool_calls"][0]["id"]
    assert first[4]["content"] == "Wrote draft.txt."
    assert first[5]["content"] == "now read it back"

    # linked both ways, and the tree carried over
    assert record_of(zap, new, "spawn")["continue_of"] == old
    assert record_of(zap, old, "continued")["by"] == new
    made = record_of(zap, new, "worktree")
    assert made["ok"] and made["how"] == "reused" and made["path"] == record_of(zap, old, "worktree")["path"]
    result = next(r for r in trail_records(zap.trail(new)) if r["type"] == "tool_result")
    assert "first draft" in result["content"]  # read in the same tree
    old_doc, new_doc = (zap.json("poll", "--no-wait", i)["subagents"][0] for i in (old, new))
    assert old_doc["continued_by"] == new and new_doc["continue_of"] == old
    again = zap("continue", old, "once more")
    assert again.returncode == 1 and f"already continued as {new}" in again.err


def test_a_call_without_result_is_closed_before_the_history_is_sent(zap, model):
    marker = sleep_marker(3401)
    srv = model([{"match": "run the slow thing", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"sleep {marker}"}}]},
        {"text": "Resumed after the interruption."}]}])
    old = _id(zap, "spawn", "--agent", "fixer", "--approval", "full", "--", "run the slow thing")
    wait_until(lambda: record_of(zap, old, "tool_call"), 20)
    os.kill(supervisor_pid(zap, old), signal.SIGKILL)  # mid-call: no result is ever written
    assert zap.wait_status(old) == "lost"
    new = _id(zap, "continue", old, "carry on")
    assert zap("wait", "--timeout", "30", new).returncode == 0, zap("replay", new).out
    sent = srv.requests[-1]["messages"]
    call = next(m for m in sent if m["role"] == "assistant" and m.get("tool_calls"))
    tool = sent[sent.index(call) + 1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == call["tool_calls"][0]["id"]
    assert tool["content"].startswith("Error: this call has no result") and "lost" in tool["content"]
    diag = [r for r in trail_records(zap.trail(new)) if r["type"] == "diagnostic"
            and r.get("dimension") == "history"]
    assert diag and "1 tool call(s) without a result" in diag[0]["message"]


def test_the_scripted_server_rejects_a_malformed_history():
    def post(messages):
        req = urllib.request.Request(srv.base_url + "/chat/completions", method="POST",
                                     data=json.dumps({"model": "m", "messages": messages}).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as exc:
            return exc.code, json.load(exc)

    call = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}
    with ScriptedServer([{"turns": [{"text": "ok"}]}]) as srv:
        status, body = post([{"role": "user", "content": "hi"}, call, {"role": "user", "content": "next"}])
        assert status == 400 and "c1" in body["error"]["message"]
        status, body = post([{"role": "user", "content": "hi"},
                             {"role": "tool", "tool_call_id": "zz", "content": "orphan"}])
        assert status == 400 and "preceeding message with 'tool_calls'" in body["error"]["message"]
        status, _ = post([{"role": "user", "content": "hi"}, call,
                          {"role": "tool", "tool_call_id": "c1", "content": "fine"}])
        assert status == 200


def test_what_cannot_be_continued(zap, model):
    model([{"match": "wait a while", "turns": [{"text": "done", "delay_s": 20}]}])
    running = _id(zap, "spawn", "--", "wait a while")
    refused = zap("continue", running, "more")
    assert refused.returncode == 1 and "only a finished subagent can be continued" in refused.err
    zap("kill", running, "--grace", "0.5", check=True)
    sh = zap.spawn_sh("true")
    assert zap("wait", sh).returncode == 0
    refused = zap("continue", sh, "more")
    assert refused.returncode == 2 and "no conversation to continue" in refused.err
    assert zap("continue", "sa_20000101_00000000", "more").returncode == 1
