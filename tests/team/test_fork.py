"""Fork (#22 item 4): a subagent started with `fork: true` (the `subagent`
tool of `zapcli run`) starts from the run's conversation so far: its first request to the model
begins with exactly the run's last request — the same system prompt and
messages, a prefix a provider's prompt cache can reuse — then the run's
message that asked for it, that call closed, and the child's own task."""

from __future__ import annotations

import json

from tests.conftest import trail_records
from zapcli.ops.fork import FORKED


def _first(srv, mark: str, *, fork: bool) -> dict:
    """The first request of the parent (`fork` False: no user message holds
    `mark`'s child task) or of the child."""
    for req in srv.requests:
        users = [m["content"] for m in req["messages"] if m["role"] == "user"]
        if any("CHILD" in u for u in users) == fork and (fork or mark in users[0]):
            return req
    raise AssertionError(f"no request of the {'child' if fork else 'parent'}: {srv.requests}")


def _assert_forked(srv, child_task: str) -> None:
    parent, child = _first(srv, "PARENT", fork=False), _first(srv, "CHILD", fork=True)
    n = len(parent["messages"])
    assert parent["messages"][0]["role"] == "system" and parent["messages"][0]["content"]
    assert child["messages"][:n] == parent["messages"]  # the identical prefix
    asked, closing, task = child["messages"][n], child["messages"][n + 1:-1], child["messages"][-1]
    assert asked["role"] == "assistant" and asked["tool_calls"], asked  # the run's own message
    later = next(r for r in srv.requests if r is not parent and len(r["messages"]) > n
                 and r["messages"][:n] == parent["messages"] and r is not child)
    assert later["messages"][n] == asked  # the run's next request carries the same message on
    assert [m["content"] for m in closing] == [FORKED] * len(asked["tool_calls"])
    assert [m["tool_call_id"] for m in closing] == [c["id"] for c in asked["tool_calls"]]
    assert task == {"role": "user", "content": child_task}


def test_subagent_tool_fork_starts_from_the_runs_conversation(zap, model):
    task = "FORK-CHILD check the changelog"
    srv = model([
        {"match_any": "FORK-CHILD", "turns": [{"text": "child: the changelog lists 3 fixes"}]},
        {"match": "FORK-PARENT", "turns": [
            {"text": "Notes read; a second pair of eyes on the changelog.", "tool_calls": [
                {"name": "subagent", "arguments": {"action": "spawn", "task": task, "fork": True}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
            {"text": "release planned"}]}])
    doc = json.loads(zap("run", "--json", "--", "FORK-PARENT plan the release", timeout=120).stdout)
    assert doc["status"] == "completed", doc
    (child,) = doc["subagents"]
    assert zap.status(child) == "completed"
    _assert_forked(srv, task)
    spawned = next(r for r in trail_records(zap.trail(child)) if r["type"] == "spawn")
    assert spawned["fork"]["system"] == srv.requests[0]["messages"][0]["content"]
    # replay says where its first request began (new user, round 6: it showed a plain spawn)
    head = zap("replay", child, check=True).out.splitlines()[1]
    n = len(spawned["fork"]["messages"])
    assert f" fork={doc['run_id']} ({n} messages of its conversation) task: {task}" in head, head


def test_fork_outside_a_run_or_on_an_agent_cli_says_why_and_starts_nothing(zap, model):
    srv = model([
        {"match": "FORK-SH", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {
                "action": "spawn", "task": "review it", "cli": "claude", "fork": True}}]},
            {"text": "refused, as it should be"}]}])
    doc = json.loads(zap("run", "--json", "--", "FORK-SH try", timeout=120).stdout)
    assert doc["status"] == "completed" and doc["subagents"] == [], doc
    answer = srv.requests[1]["messages"][-1]
    assert answer["role"] == "tool" and "fork needs the built-in agent" in answer["content"], answer
    # `zapcli call` (and an MCP client) has no conversation to give
    outside = zap("call", json.dumps({"action": "spawn", "task": "anything", "fork": True}))
    assert outside.returncode == 2 and "only the subagent tool of `zapcli run`" in outside.out + outside.err
    assert "Traceback" not in outside.err
    assert zap.json("list")["subagents"] == []
