"""Messages between siblings and the team tools (#22 items 2 and 3), with
the built-in agent against the scripted server and real `zapcli send`
processes inside `sh` subagents:

- a subagent whose definition declares `team: true` gets the `board` and
  `message` tools; one that does not declare it gets neither;
- a message to a sibling by name, from its `message` tool and from `zapcli
  send` in a sibling's commands, reaches it before its next model call,
  saying whom it is from;
- a subagent of another session cannot reach it, and is told why.
"""

from __future__ import annotations

import json
import sys

from tests.conftest import trail_records, wait_until

TEAM = "name: {name}\ndescription: {name} of the team\nteam: true\ntools: []\n"
PLAIN = "name: plain\ndescription: no team\ntools: []\n"
ZAP = f"{sys.executable} -m zapcli"


def _define(zap, name: str, text: str) -> None:
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yml").write_text(text)
    zap("trust", check=True)


def _tools(req) -> set[str]:
    return {t["function"]["name"] for t in req.get("tools") or []}


def test_siblings_message_each_other_by_name_and_other_sessions_cannot(zap, model):
    for name in ("alice", "bob"):
        _define(zap, name, TEAM.format(name=name))
    _define(zap, "plain", PLAIN)
    srv = model([
        {"match": "BOB", "turns": [  # waits on the board until the person finishes t1
            {"tool_calls": [{"name": "board", "arguments": {"action": "claim", "task": "t2",
                                                            "wait_secs": 120}}]},
            {"text": "bob: read my messages"}]},
        {"match": "ALICE", "turns": [
            {"tool_calls": [{"name": "message", "arguments": {
                "action": "send", "to": "bob", "text": "use the v2 schema"}}]},
            {"text": "alice: told bob"}]},
        {"match": "PLAIN", "turns": [{"text": "plain: no team"}]}])
    zap("board", "add", "write the schema", check=True)
    zap("board", "add", "--after", "t1", "migrate the data", check=True)
    zap("board", "claim", "t1", check=True)  # the person holds t1: bob's claim of t2 waits

    bob = zap("spawn", "--agent", "bob", "--", "BOB migrate", check=True).out.strip()
    wait_until(lambda: any("BOB" in str(r["messages"]) for r in srv.requests), 30)
    alice = zap("spawn", "--agent", "alice", "--", "ALICE design", check=True).out.strip()
    plain = zap("spawn", "--agent", "plain", "--", "PLAIN work", check=True).out.strip()
    assert zap.wait_status(alice, 60) == "completed"
    # `zapcli send` from inside a sibling's commands: from it, to bob by name
    sibling = zap.spawn_sh(f"{ZAP} send bob 'the tests are green'")
    assert zap.wait_status(sibling, 60) == "completed", trail_records(zap.trail(sibling))
    # a subagent of another session cannot reach bob, even by id
    stranger = zap("spawn", "--cli", "sh", "--", f"{ZAP} send {bob} 'from elsewhere' 2>&1",
                   env={"ZAPCLI_SESSION": "another-session"}, check=True).out.strip()
    assert zap.wait_status(stranger, 60) == "failed"
    said = zap("output", stranger).out
    assert "is not in your session" in said, said

    zap("board", "done", "t1", "--result", "schema in db/schema.sql", check=True)
    assert zap.wait_status(bob, 60) == "completed"
    bob_reqs = [r for r in srv.requests if "BOB" in str(r["messages"][1])]
    before, after = bob_reqs[0]["messages"], bob_reqs[1]["messages"]
    told = [m["content"] for m in after[len(before):] if m["role"] == "user"]
    assert any(t.startswith(f"[message from {alice} (alice, zapcli)]") and "v2 schema" in t
               for t in told), told
    assert any(t.startswith(f"[message from {sibling}") and "tests are green" in t
               for t in told), told
    assert not any("from elsewhere" in t for t in told)
    # the team tools only where declared
    assert {"board", "message"} <= _tools(bob_reqs[0])
    (plain_req,) = [r for r in srv.requests if "PLAIN" in str(r["messages"][1])]
    assert not {"board", "message"} & _tools(plain_req), _tools(plain_req)
    assert zap.wait_status(plain, 60) == "completed"


def test_a_run_whose_definition_declares_team_works_its_sessions_board(zap, model):
    """new user, round 6: `zapcli run --agent lead` with `team: true` got no
    board or message tool (the model was told "`board` is not available"),
    though the run is a holder of its own session's board. A run whose
    definition does not declare it still gets neither."""
    _define(zap, "lead", TEAM.format(name="lead"))
    _define(zap, "plain", PLAIN)
    srv = model([
        {"match": "LEAD", "turns": [
            {"tool_calls": [{"name": "board", "arguments": {"action": "add", "text": "split the work"}}]},
            {"tool_calls": [{"name": "board", "arguments": {"action": "claim"}}]},
            {"tool_calls": [{"name": "board", "arguments": {"action": "done", "result": "split in 3"}}]},
            {"text": "lead: done"}]},
        {"match": "PLAIN", "turns": [{"text": "plain: done"}]}])
    doc = json.loads(zap("run", "--json", "--agent", "lead", "--", "LEAD plan", timeout=120).stdout)
    assert doc["status"] == "completed", doc
    (task,) = zap.json("board", "list", env={"ZAPCLI_SESSION": doc["run_id"]})["tasks"]
    assert (task["state"], task["holder"], task["result"]) == ("done", doc["run_id"], "split in 3")
    assert {"board", "message"} <= _tools(srv.requests[0])
    plain = json.loads(zap("run", "--json", "--agent", "plain", "--", "PLAIN plan", timeout=120).stdout)
    assert plain["status"] == "completed", plain
    assert not {"board", "message"} & _tools(srv.requests[-1])


def test_read_says_a_message_is_waiting_when_one_is(zap, model):
    """new user, round 6: a built-in team agent's `message read` answered "none
    is waiting now" while a message sent to it was waiting (and was handed to
    it right after, before its next model call)."""
    _define(zap, "carol", TEAM.format(name="carol"))
    srv = model([{"match": "CAROL", "turns": [
        {"hold": "sent", "tool_calls": [{"name": "message", "arguments": {"action": "read"}}]},
        {"tool_calls": [{"name": "message", "arguments": {"action": "read"}}]},
        {"text": "carol: done"}]}])
    carol = zap("spawn", "--agent", "carol", "--", "CAROL work", check=True).out.strip()
    wait_until(lambda: len(srv.requests) >= 1, 30)
    zap("send", carol, "the schema is v2", check=True)
    srv.release("sent")
    assert zap.wait_status(carol, 60) == "completed"
    results = [r["content"] for r in trail_records(zap.trail(carol)) if r["type"] == "tool_result"]
    assert results[0].endswith("1 sent to you will be with it."), results
    assert results[1].endswith("none is waiting now."), results  # handed over meanwhile
    told = [m["content"] for m in srv.requests[1]["messages"] if m["role"] == "user"]
    assert any("the schema is v2" in t for t in told), told
