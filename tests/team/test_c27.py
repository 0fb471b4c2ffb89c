"""C27 (a child ends while its own work is pending): a subagent that ends
with a subagent of its own still running says so — in its status and in
poll — and the run above it takes that work over: the model is told, its
`wait` waits for it, its result reaches the run's model, and when the run
ends no result is left unreceived."""

from __future__ import annotations

import json
import sys

from tests.conftest import record_of

LATE = "late grandchild result"


def test_c27_work_left_running_by_a_finished_child_reaches_the_run(zap, model):
    grandchild = f"{sys.executable} -m zapcli spawn --cli sh -- 'sleep 8; echo {LATE}' > gc.id"
    srv = model([{"match": "C27 tree", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {
            "action": "spawn", "task": f"{grandchild}; echo child done", "cli": "sh"}}]},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
        {"text": "all in"}]}])
    doc = json.loads(zap("run", "--approval", "full", "--no-sandbox", "--json", "--", "C27 tree", timeout=180).stdout)
    assert doc["status"] == "completed", doc
    gc = (zap.cwd / "gc.id").read_text().strip()
    assert gc, [zap("output", s).out for s in doc["subagents"]]
    child = next(s for s in doc["subagents"] if s != gc)
    assert record_of(zap, child, "status")["pending"] == [gc]  # it said what it left running
    shown = zap("poll", "--no-wait", child).out
    assert f"1 subagent(s) of its own still running: {gc}" in shown, shown
    told = [m["content"] for m in srv.requests[2]["messages"] if m["role"] == "user"]
    assert any(f"[SubAgent] {child} (it ended with 1 subagent(s) of its own still running: {gc}"
               in t for t in told), told  # the run took it over
    waited = srv.requests[3]["messages"][-1]
    assert waited["role"] == "tool" and gc in waited["content"] and LATE in waited["content"], waited
    assert gc in doc["subagents"] and doc["undelivered"] == [], doc  # nothing left unreceived
    assert zap.status(gc) == "completed"
