"""`zapcli run --model M`: the subagents its model spawns without naming a
model get M — the run's model is the session default of its tree
(docs/explanation/rules.md#managing-definitions: a spawn's own `model` >
local override > the definition's > the session default). Before: with no ZAPCLI_MODEL and no
`model:` in config.yaml (docs/how-to/budgets.md's `zapcli run --model
my-model … "review src/ in parallel"`), every child was refused: `no model
configured`."""

from __future__ import annotations

from tests.conftest import trail_records


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def test_a_runs_children_get_its_model_unless_they_name_one(zap, model):
    model([{"match": "lead two", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "child one"}},
                        {"name": "subagent", "arguments": {"action": "spawn", "task": "child two",
                                                           "model": "named-model"}}]},
        call("subagent", action="wait", timeout=60),
        {"text": "both done"}]},
        {"match": "child", "turns": [{"text": "child report"}], "loop": True}])
    del zap.env["ZAPCLI_MODEL"]  # no session default: only the run's --model
    res = zap("run", "--model", "scripted", "lead two", timeout=120)
    assert res.returncode == 0, res.out + res.err
    assert "no model configured" not in res.out + res.err
    spawns = {r["task"]: r for p in (zap.home / "subagents").glob("*.jsonl")
              for r in trail_records(p) if r["type"] == "spawn"}
    assert {t: s["model"] for t, s in spawns.items()} == {"child one": "scripted",
                                                          "child two": "named-model"}, spawns
    ends = {p.stem: [r for r in trail_records(p) if r["type"] == "status"][-1]["status"]
            for p in (zap.home / "subagents").glob("*.jsonl")}
    assert sorted(ends.values()) == ["completed", "completed"], ends
