"""`zapcli continue` with the built-in agent against the scripted server (docs/explanation/rules.md#parallel-coding)."""

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
    assert refused.returncode == 1 and "no conversation to continue" in refused.err
    # A new user's trial: `send` to it exited 1 where `continue` exited 2 for
    # the same refusal. What the subagent cannot take fails (1), as diff of
    # one without a worktree does; 2 is for what was typed wrong.
    for args in (("send", sh, "more"), ("continue", sh, "more"), ("diff", sh)):
        res = zap(*args)
        assert res.returncode == 1 and "Traceback" not in res.err, (args, res.returncode, res.err)
    said = zap("send", sh, "more").err  # a new user's trial: it spoke of team tools
    assert "is a shell command: nothing reads a message it is sent" in said and "team tools" not in said
    for args in (("send", sh, "more"), ("continue", sh, "more")):
        doc = json.loads(zap(*args, "--json").out)["error"]
        assert (doc["code"], doc["exit_code"]) == ("wrong_backend", 1), (args, doc)
    assert zap("send", sh, "   ").returncode == 2  # an empty message is still a usage error
    assert zap("continue", "sa_20000101_00000000", "more").returncode == 1


def test_a_queued_continuation_keeps_its_predecessor_until_it_has_read_it(zap, model):
    """Chaos run (#24.10): with a cap of 1, `B=$(zapcli continue A …)` queued B,
    then `zapcli rm A` deleted A's trail and B failed "the trail of A cannot
    be read". A predecessor is kept, like an `--after` dependency, until its
    successor has read it; a chain's first link too (the last one reads them
    all). (gc deletes nothing while one is queued or running.)"""
    srv = model([{"match": "first words", "turns": [{"text": "First answer."}]},
                 {"match": "second words", "turns": [{"text": "Second answer."}]},
                 {"match": "third words", "turns": [{"text": "Third answer."}]}])
    zap.env["ZAPCLI_MAX_CONCURRENT"] = "1"
    first = _id(zap, "spawn", "--", "first words")
    assert zap("wait", "--timeout", "30", first).returncode == 0
    second = _id(zap, "continue", first, "second words")
    assert zap("wait", "--timeout", "30", second).returncode == 0
    go = zap.cwd / "go"
    blocker = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done")  # holds the only slot
    third = _id(zap, "continue", second, "third words")
    assert zap.status(third) == "queued"
    for old in (second, first):  # the queued one reads both
        res = zap("rm", old)
        assert res.returncode == 1 and f"{third} continues it" in res.out, res.out
    doc = zap.json("clean")
    assert doc["removed"] == [] and {k["id"] for k in doc["kept"]} == {first, second}, doc
    assert all("kept: a continuation has not read it yet" in k["message"] for k in doc["kept"])
    go.touch()
    assert zap("wait", "--timeout", "30", third, blocker).returncode == 0, zap("replay", third).out
    sent = [m["content"] for m in srv.requests[-1]["messages"] if m["role"] == "user"]
    assert sent == ["first words", "second words", "third words"]
    assert record_of(zap, third, "resumed")["from"] == second
    assert zap("rm", first, second).returncode == 0  # free to go once it has read them
    assert zap.json("poll", "--no-wait", third)["subagents"][0]["status"] == "completed"
