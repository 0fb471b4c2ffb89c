"""C41: money that holds for every backend (issue 30 item 3). `--max-cost`
and `--max-tokens` are checked while agent-CLI subagents run, by the one
meter every backend feeds: Claude Code says a call's input (and cache) as
the call starts and its cost only when the turn ends, so a claude child
whose turn loops tool calls is stopped mid-turn once its allotment is spent,
and the call that passed it is counted. Children spawned in one message
reserve before they start: together they pass the tree's limit by at most
one call each. Children that could not be funded end `failed` ("budget"),
and the parent is told how many.
"""

from __future__ import annotations

import json

import pytest

from tests.backends import clitest as ct
from zapcli.testing.server import ScriptedServer

SONNET = "claude-sonnet-4-5"  # $3 / $15 per million: a 33,000-token call costs about $0.10
BASH = {"name": "Bash", "arguments": {"command": "echo paid", "description": "echo"}}
ONE_CALL = 33000 * 3e-6 + 10 * 15e-6


def _loops(match: str, generate_s: float = 0.3) -> dict:
    """Calls of 33,000 input tokens, forever, each answered as the provider
    does: message_start (the call's input) at once, the rest as the model
    generates it (a moment). A budgeted claude says each call as it starts
    (partial messages), so the budget stops it within the call that passed it."""
    call = {"tool_calls": [BASH], "usage": {"prompt_tokens": 33000, "completion_tokens": 10},
            "generate_s": generate_s}
    return {"match": match, "loop": True, "turns": [call]}


def _priced(zap) -> None:
    ct.configure(zap, "claude", extra="prices:\n  scripted: {input: 0.01, output: 0.01}\n")


def _cost(zap, sid: str) -> float:
    return sum(u.get("cost_usd") or 0 for u in ct.records(zap, sid, "usage"))


@pytest.mark.parametrize("flag,limit", [("--max-cost", "0.25"), ("--max-tokens", "80000")])
def test_a_claude_child_is_stopped_mid_turn_at_its_budget(zap, flag, limit):
    with ScriptedServer([_loops("loop and pay")], protocol="anthropic") as srv:
        _priced(zap)
        sid = ct.spawn(zap, "claude", "loop and pay", ct.cli_env("claude", srv), "--model", SONNET,
                       "--approval", "full", flag, limit, "--timeout", "60")
        assert zap.wait_status(sid, timeout=90) == "failed", ct.dump(zap, sid)
        doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    want = "cost budget" if flag == "--max-cost" else "token budget"  # the limit it reached
    assert doc["reason"].startswith(want), doc["reason"]
    calls = len(srv.requests)
    if flag == "--max-cost":
        assert _cost(zap, sid) <= 0.25 + ONE_CALL + 1e-9 and calls <= 4, (calls, _cost(zap, sid))
        assert doc["cost_usd"] == pytest.approx(_cost(zap, sid))
    else:
        tokens = doc["input_tokens"] + doc["output_tokens"]
        assert tokens <= 80000 + 33010 and calls <= 4, (calls, tokens)
    # the call that passed the budget is counted, though the turn never ended
    assert any(u.get("estimated") for u in ct.records(zap, sid, "usage"))
    row = ct.usage_rows(zap, sid)[0]
    assert row["input_tokens"] == doc["input_tokens"] > 0


def test_eight_claude_children_in_one_message_hold_the_tree_within_one_call_each(zap, model):
    spawns = [{"name": "subagent", "arguments": {
        "action": "spawn", "agent": "payer", "timeout": 60, "task": f"paying child {n}"}}
        for n in range(8)]
    parent = model([{"match": "fan out", "turns": [
        {"tool_calls": spawns, "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 120}}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"text": "all paid", "usage": {"prompt_tokens": 100, "completion_tokens": 10}}]}])
    with ScriptedServer([_loops("paying child", 1.5)], protocol="anthropic") as srv:
        _priced(zap)
        ct.cli_definition(zap, "payer", "claude", ["bash", "read"], model=SONNET)
        proc = zap("run", "--max-cost", "0.50", "--approval", "full", "--no-sandbox", "--json",
                   "--", "fan out", env=ct.cli_env("claude", srv), timeout=200)
        doc = json.loads(proc.stdout)
    children = doc["subagents"]
    told = [m.get("content") for m in parent.requests[1]["messages"] if m.get("role") == "tool"] \
        if len(parent.requests) > 1 else []
    assert len(children) == 8, (json.dumps(doc), proc.stderr[-3000:], told)  # what each spawn said
    tree = doc["tree_tokens"]["cost_usd"]
    assert tree <= 0.50 + 8 * ONE_CALL, (tree, doc)
    # what the provider bills: every call that reached it, counted or not (a call cut short
    # is paid for its input): each child is stopped within the call that passed its allotment
    assert len(srv.requests) * ONE_CALL <= 0.50 + 8 * ONE_CALL, len(srv.requests)
    env = {"ZAPCLI_SESSION": doc["run_id"]}
    for sid in children:
        view = zap.json("poll", "--no-wait", sid, env=env)["subagents"][0]
        assert view["status"] == "failed" and view["reason"].startswith("cost budget"), view
        assert view["cost_usd"] == pytest.approx(_cost(zap, sid)) and _cost(zap, sid) > 0
    session = zap.json("usage", env=env)["sessions"][0]
    assert session["tree"]["cost_usd"] == pytest.approx(tree)


def test_children_that_cannot_be_funded_end_failed_and_the_parent_is_told(zap, model):
    """One message spawns five children that each ask for $0.02 of a $0.05
    tree (they are spawned concurrently, in any order): two get $0.02, one
    the rest, and the last two find nothing free. Those end `failed`
    (budget) without starting; the run waits for the funded ones to return
    what they did not use, and its next call is told how many could not be
    funded."""
    asks = [{"name": "subagent", "arguments": {"action": "spawn", "cli": "sh", "max_cost": 0.02,
                                               "task": f"sleep 2; echo child {n}", "timeout": 30}}
            for n in range(5)]
    parent = model([{"match": "hold it all", "turns": [
        {"tool_calls": asks, "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"text": "told", "usage": {"prompt_tokens": 100, "completion_tokens": 10}}]}])
    _priced(zap)
    proc = zap("run", "--max-cost", "0.05", "--approval", "full", "--no-sandbox", "--json", "--",
               "hold it all", timeout=120)
    doc = json.loads(proc.stdout)
    assert doc["status"] == "completed", doc
    env = {"ZAPCLI_SESSION": doc["run_id"]}
    views = [zap.json("poll", "--no-wait", sid, env=env)["subagents"][0] for sid in doc["subagents"]]
    assert len(views) == 5, views
    unfunded = [v for v in views if v["status"] == "failed"]
    assert len(unfunded) == 2, [(v["task"], v["status"], v["reason"]) for v in views]
    for v in unfunded:
        assert v["reason"].startswith("budget"), json.dumps(v)
        assert not ct.records(zap, v["id"], "process"), json.dumps(v)  # never started
    told = json.dumps(parent.requests[1]["messages"])
    assert "2 subagents could not be funded" in told, told[-3000:]
