"""`zapcli run --max-tokens N` is a budget for the whole tree (SPEC §16)."""

from __future__ import annotations

import json


def _u(prompt: int, completion: int = 0) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def test_notice_at_80_percent_then_spawns_refused_and_the_run_stops(zap, model):
    srv = model([{"match": "spend the budget", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "list"}}], "usage": _u(850)},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "late child"}}],
         "usage": _u(200)},
        {"text": "should never be asked", "usage": _u(10)}]}])
    proc = zap("run", "--max-tokens", "1000", "--json", "--", "spend the budget")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["status"] == "failed"
    assert doc["reason"].startswith("token budget exceeded (1,050 of 1,000")
    assert doc["subagents"] == []  # the spawn was refused
    second = srv.requests[1]["messages"]
    assert any(m["role"] == "user" and "[token budget] 850 of 1,000" in m["content"] for m in second)
    assert len(srv.requests) == 2
    usage = zap.json("usage", env={"ZAPCLI_SESSION": doc["run_id"]})["sessions"][0]
    assert usage["budget"] == 1000 and usage["tree_total"] == 1050


def test_running_subagents_count_and_are_stopped_at_100_percent(zap, model):
    model([
        {"match": "fan out", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": f"child {n} burns"}}
                            for n in (1, 2)], "usage": _u(100)},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}],
             "usage": _u(100)},
            {"text": "never", "usage": _u(10)}]},
        {"match": "burns", "loop": True, "turns": [
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}], "usage": _u(250, 50),
             "delay_s": 0.2}]}])
    proc = zap("run", "--max-tokens", "1500", "--json", "--", "fan out")
    doc = json.loads(proc.stdout)
    assert doc["status"] == "failed" and doc["reason"].startswith("token budget"), doc
    assert len(doc["subagents"]) == 2
    env = {"ZAPCLI_SESSION": doc["run_id"]}
    for sid in doc["subagents"]:
        child = zap.json("poll", "--no-wait", sid, env=env)["subagents"][0]
        assert child["status"] == "failed" and child["reason"].startswith("token budget"), child
    usage = zap.json("usage", env=env)["sessions"][0]
    assert usage["budget"] == 1500 and usage["tree_total"] >= 1500
    assert sum(s["input_tokens"] + s["output_tokens"] for s in usage["subagents"]) > 0
    text = zap("usage", env=env).out
    assert "budget: " in text and "of 1500 tokens" in text


def test_one_check_reads_the_tree_once(zap):
    """Before each model step the run enforces and asks whether to stop: the
    tokens used (every child's trail) are read once for both."""
    from zapcli.cli.settings import for_observers
    from zapcli.ops.budget import TreeBudget

    reads = []
    budget = TreeBudget("run-x", 1000, own=lambda: reads.append(1) or 1200, children=list,
                        settings=for_observers())
    used = budget.enforce()
    assert used == 1200 and budget.should_stop(used) == (
        "failed", "token budget exceeded (1,200 of 1,000 tokens, this run and its subagents)")
    assert len(reads) == 1
