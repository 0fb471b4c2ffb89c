"""A tree budget that holds (docs/explanation/rules.md#parallel-coding, docs/explanation/rules.md#budgets; issue 19): `zapcli run --max-tokens N`
allots each subagent a share of what is not yet reserved, every surface shows
the same settled figures, and a child whose final answer had arrived is
`completed`."""

from __future__ import annotations

import json

from tests.conftest import record_of

REQUEST = 2500  # one child request below: 2000 in + 500 out


def _u(prompt: int, completion: int = 0) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def _figures(doc: dict) -> int:
    return doc["input_tokens"] + doc["output_tokens"]


def test_c26_two_parallel_children_hold_the_budget_and_every_surface_agrees(zap, model):
    """Issue 19: two parallel children each given "what is left" overshot a
    20,000-token budget by 55 %, and run --json, usage, poll and the child's
    reason disagreed."""
    model([
        {"match": "fan out", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": f"child {n} burns"}}
                            for n in (1, 2)], "usage": _u(90, 10)},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}],
             "usage": _u(90, 10)},
            {"text": "all done", "usage": _u(90, 10)}]},
        {"match": "burns", "loop": True, "turns": [
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}], "usage": _u(2000, 500),
             "delay_s": 0.1}]}])
    proc = zap("run", "--max-tokens", "20000", "--json", "--", "fan out", timeout=120)
    doc = json.loads(proc.stdout)
    env = {"ZAPCLI_SESSION": doc["run_id"]}
    usage = zap.json("usage", env=env)["sessions"][0]
    assert usage["tree_total"] <= 20000 + REQUEST, usage  # on main: 40,200
    tree = _figures(doc["tree_tokens"])
    assert usage["tree_total"] == tree and usage["budget"] == 20000
    assert _figures(usage["own"]) == _figures(doc["tokens"]) == 300
    children = 0
    for sid in doc["subagents"]:
        child = zap.json("poll", "--no-wait", sid, env=env)["subagents"][0]
        row = next(s for s in usage["subagents"] if s["id"] == sid)
        assert child["input_tokens"] + child["output_tokens"] == _figures(row)
        assert child["status"] == "failed" and child["reason"].startswith("token budget: "), child
        spent = _figures(row)
        assert f"{spent:,} of its" in child["reason"]  # the reason's figure is the settled one
        replayed = zap.json("replay", sid, env=env)["tokens"]
        assert _figures(replayed) == spent and replayed["calls"] == row["calls"]
        children += spent
    assert children + 300 == tree
    assert doc["undelivered"] == [] and doc["status"] == "completed"
    assert "budget: " in zap("usage", env=env).out


def test_notice_at_80_percent_then_spawns_refused_and_the_run_stops(zap, model):
    srv = model([{"match": "spend the budget", "turns": [
        *[{"tool_calls": [{"name": "subagent", "arguments": {"action": "list"}}], "usage": _u(900, 100)}
          for _ in range(8)],
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "late child"}}],
         "usage": _u(1900, 100)},
        {"text": "should never be asked", "usage": _u(10)}]}])
    proc = zap("run", "--max-tokens", "10000", "--json", "--", "spend the budget")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["status"] == "failed"
    assert doc["reason"].startswith("token budget exceeded (10,000 of 10,000 tokens"), doc["reason"]
    assert doc["subagents"] == []  # the spawn was refused: nothing is left to allot
    ninth = srv.requests[8]["messages"]
    assert any(m["role"] == "user" and "[token budget] 8,000 of 10,000" in m["content"] for m in ninth)
    assert len(srv.requests) == 9
    usage = zap.json("usage", env={"ZAPCLI_SESSION": doc["run_id"]})["sessions"][0]
    assert usage["budget"] == 10000 and usage["tree_total"] == 10000


def test_a_model_call_recorded_after_the_end_is_counted_once(zap):
    """Issue 19: the child's last model call was recorded after its terminal
    status, the ledger had settled it already, and that call never counted."""
    from zapcli.lifecycle.observe import observe
    from zapcli.ops.usage import settle, usage
    from zapcli.trail import store

    sid = zap.spawn_sh("true")
    zap.wait_status(sid)
    path = store.path_for(sid)
    store.append(path, "usage", {"model": "m", "input_tokens": 100, "output_tokens": 10,
                                 "cached_tokens": 40, "cache_write_tokens": 20})
    assert settle(observe(sid))
    store.append(path, "usage", {"model": "m", "input_tokens": 7, "output_tokens": 3})  # after
    assert settle(observe(sid)) and not settle(observe(sid))  # counted, and only once
    (p,) = [p for p in usage() if p.parent == zap.env["ZAPCLI_SESSION"]]
    (row,) = p.subagents
    t = row[2]
    assert (t.input_tokens, t.output_tokens, t.cached_tokens, t.cache_write_tokens, t.calls) == \
        (107, 13, 40, 20, 2)
    text = zap("usage").out
    assert "107 in (40 cache-read, 20 cache-write), 13 out in 2 model calls" in text, text
    assert "(40 cache-read, 20 cache-write)" in zap("poll", "--no-wait", sid).out


def test_a_child_whose_final_answer_arrived_is_completed_when_the_budget_stops_it(zap):
    """Issue 19: a subagent whose final answer had already arrived was marked
    `failed (token budget)` when the tree's budget ran out."""
    from zapcli.budget.allot import Budget
    from zapcli.budget.meter import Meter
    from zapcli.budget.tree import TreeBudget
    from zapcli.config import load_settings
    from zapcli.trail import store

    answered = zap.spawn_sh("sleep 60")
    working = zap.spawn_sh("sleep 61")
    store.append(store.path_for(answered), "report", {"text": "the answer"})
    meter = Meter("m", max_tokens=1000)
    meter.tokens = 1200  # the run's own calls already passed it
    from zapcli.ops.kill import end_and_stop
    from zapcli.ops.usage import settle

    budget = TreeBudget(zap.env["ZAPCLI_SESSION"], Budget(1000), meter, load_settings(), stop=end_and_stop, settle=settle)
    assert budget.enforce() is not None
    done = record_of(zap, answered, "status")
    assert (done["status"], done["by"]) == ("completed", "budget"), done
    stopped = record_of(zap, working, "status")
    assert stopped["status"] == "failed" and stopped["reason"].startswith("token budget"), stopped
    assert zap.json("poll", "--no-wait", answered)["subagents"][0]["report"] == "the answer"


def test_usage_shows_a_spawned_subagents_own_budget_beside_it(zap, model):
    """The Budgets page's example (a new user's finding: `usage` showed no
    budget for `spawn --max-tokens`): the subagent's row says its own tree's
    budget, with what it and its subagents used — also when its work spawned
    nothing (no tree was recorded: its spawn record holds the budget)."""
    model([{"match": "split the checks", "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}], "usage": _u(900, 100)},
        {"text": "split done", "usage": _u(1800, 200)}]}])
    sid = zap("spawn", "--max-tokens", "50000", "--agent", "general", "--",
              "split the checks across subagents", check=True).out.strip()
    assert zap.wait_status(sid) == "completed"
    zap("wait", sid)
    doc = zap.json("usage")["sessions"][0]
    row = next(s for s in doc["subagents"] if s["id"] == sid)
    assert (row["budget"], row["max_cost"]) == (50000, None), row
    text = zap("usage").out  # figures with thousands separators, as run's and poll's
    said = [x for x in text.splitlines() if f"{sid}:" in x]
    assert said and ("2,700 in, 300 out in 2 model calls; budget: 3,000 of 50,000 tokens (6%) "
                     "with its subagents") in said[0], said
    assert ": 2,700 in, 300 out in 2 model calls" in text.splitlines()[0], text
