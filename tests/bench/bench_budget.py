"""Tree budgets (docs/explanation/rules.md#budgets, issue 19): the check before each model step, and
how far a tree can overshoot its budget with children spending at once.

Usage: .venv/bin/python tests/bench/bench_budget.py [--children 50] [--checks 2000]

1. The check a `zapcli run` makes before each of its model calls
   (`budget.tree.TreeBudget.check`), in this process, against a state folder
   holding 50 children: each has a trail with 40 `usage` records and an
   allotment in the ledger; between checks two children append a record
   (the incremental trail reads then have something to read). Goal ≤ 1 ms.
   Reference, measured in the same run: what the check cost before issue 19
   — every child's trail read and summarised whole (`lifecycle.observe.load`).
   Beside it, the check an agent-CLI child makes as its stream says each
   call (`budget.meter.Meter.passed`, with `allot.Held` for what its own 50
   agent-CLI children hold): issue 30's "budget check per model event with
   50 agent-CLI children". Goal ≤ 1 ms each.
2. The overshoot: a real `zapcli run --max-tokens N` whose model spawns 8
   children in one message; each child loops tool calls against the scripted
   server, whose usage is estimated from the request size (so each request is
   larger than the last: the children's prediction of their next call is
   tested, not given). Printed: the tree's total (as `usage` settles it) ÷ N,
   beside the goal 1 + one request ÷ N (the largest single request seen).
3. Money with agent CLIs (issue 30): a real `zapcli run --max-cost 0.50`
   whose model spawns 8 Claude Code children (the pinned CLI) in one
   message, each looping tool calls of 33,000 input tokens at $3 per million
   (about $0.10 a call) against a scripted Anthropic server. Printed: the
   tree's total dollars beside the goal 0.50 + 8 × one call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def _children(run_id: str, n: int) -> list[str]:
    from zapcli import ids, ledger
    from zapcli.budget import allot
    from zapcli.lifecycle import session as sessions
    from zapcli.trail import store

    allot.set_budget(run_id, allot.Budget(10**12))
    out = []
    for _ in range(n):
        sid = ids.new_id()
        store.create_trail(sid, {"session": run_id, "cli": "claude", "task": "bench", "cwd": "/",
                                 "workspace": "/", "parent": run_id}, [])
        for _ in range(40):
            store.append(store.path_for(sid), "usage", {"model": "m", "input_tokens": 900,
                                                        "output_tokens": 100, "cost_usd": 0.004})
        sessions.add(run_id, sid)
        allot.reserve(run_id, sid, ledger.Tokens(), tokens=10**6, root=run_id)
        out.append(sid)
    return out


def bench_check(n: int, checks: int) -> None:
    from zapcli.budget.allot import Budget, Held
    from zapcli.budget.meter import Meter
    from zapcli.budget.tree import TreeBudget
    from zapcli.config import load_settings
    from zapcli.lifecycle.observe import load
    from zapcli.trail import store

    run_id = "run_bench_check"
    kids = _children(run_id, n)
    meter = Meter("m", max_tokens=10**12, held=Held(run_id))
    from zapcli.ops.kill import end_and_stop
    from zapcli.ops.usage import settle

    budget = TreeBudget(run_id, Budget(10**12), meter, load_settings(), stop=end_and_stop, settle=settle)
    budget.check(1000)  # first reads of every trail, and the ledger connection
    took = []
    for i in range(checks):
        for sid in (kids[i % n], kids[(i * 7) % n]):
            store.append(store.path_for(sid), "usage", {"model": "m", "input_tokens": 9,
                                                        "output_tokens": 1})
        t0 = time.perf_counter()
        assert budget.check(1000) is None
        took.append(time.perf_counter() - t0)
    old = []
    for _ in range(max(checks // 20, 20)):
        t0 = time.perf_counter()
        sum(load(sid).input_tokens + load(sid).output_tokens for sid in kids)
        old.append(time.perf_counter() - t0)
    med, p90 = statistics.median(took) * 1e3, sorted(took)[int(len(took) * 0.9)] * 1e3
    ref = statistics.median(old) * 1e3
    print(f"budget check per model step, {n} children: median {med:.3f} ms, p90 {p90:.3f} ms "
          f"(goal <= 1 ms: {'met' if med <= 1 else 'NOT met'})")
    print(f"  reference, every child's trail read whole (the check before issue 19): {ref:.2f} ms "
          f"(the check is {ref / med:.0f}x faster)")
    child = Meter("m", max_cost=10.0**6, held=Held(run_id))
    pending = [{"model": "m", "input_tokens": 33000}]
    child.passed(pending)
    events = []
    for _ in range(checks):
        child.record({"model": "m", "input_tokens": 900, "output_tokens": 100, "cost_usd": 0.004})
        t0 = time.perf_counter()
        assert child.passed(pending) is None
        events.append(time.perf_counter() - t0)
    emed = statistics.median(events) * 1e3
    ep90 = sorted(events)[int(len(events) * 0.9)] * 1e3
    print(f"agent-CLI check per model event ({n} agent-CLI children holding allotments): median "
          f"{emed:.3f} ms, p90 {ep90:.3f} ms (goal <= 1 ms: {'met' if emed <= 1 else 'NOT met'})")


def bench_overshoot(limit: int, children: int) -> None:
    from zapcli.testing import ScriptedServer

    script = [
        {"match": "fan out", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn",
                                                               "task": f"bench child {i} spends"}}
                            for i in range(children)], "usage": {"prompt_tokens": 900,
                                                                 "completion_tokens": 100}},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 300}}],
             "usage": {"prompt_tokens": 900, "completion_tokens": 100}},
            {"text": "done", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]},
        {"match": "spends", "loop": True, "turns": [
            {"tool_calls": [{"name": "read", "arguments": {"path": "big.txt"}}]}]}]
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(script) as srv:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "big.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 120)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZAPCLI_")}
        env.update(ZAPCLI_HOME=f"{tmp}/state", ZAPCLI_CONFIG_HOME=f"{tmp}/config",
                   OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY="sk-bench",
                   PYTHONPATH=str(REPO), ZAPCLI_MAX_CONCURRENT=str(children))
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "zapcli", "run", "--max-tokens", str(limit),
                              "--json", "--", "fan out"], env=env, cwd=work, capture_output=True,
                             text=True, timeout=600)
        doc = json.loads(out.stdout)
        usage = json.loads(subprocess.run(
            [sys.executable, "-m", "zapcli", "usage", "--json"], cwd=work, capture_output=True,
            text=True, env={**env, "ZAPCLI_SESSION": doc["run_id"]}).stdout)["sessions"][0]
        biggest = max(_request_sizes(env, usage))
    total = usage["tree_total"]
    goal = 1 + biggest / limit
    print(f"overshoot, {children} children spending at once, --max-tokens {limit}: tree total "
          f"{total} = {total / limit:.3f} x the budget (goal <= 1 + one request = {goal:.3f}: "
          f"{'met' if total / limit <= goal else 'NOT met'}); {time.monotonic() - t0:.1f} s")
    print(f"  {len(doc['subagents'])} children, largest request {biggest} tokens; the run "
          f"{doc['status']}: {doc['reason'] or 'completed'}")


def bench_money(children: int = 8, max_cost: float = 0.50) -> None:
    from tests.conftest import agent_cli

    sonnet, one_call = "claude-sonnet-4-5", 33000 * 3e-6 + 10 * 15e-6
    bash = {"name": "Bash", "arguments": {"command": "echo paid", "description": "echo"}}
    child_script = [{"match": "paying child", "loop": True, "turns": [
        {"tool_calls": [bash], "usage": {"prompt_tokens": 33000, "completion_tokens": 10},
         "generate_s": 1.5}]}]
    spawns = [{"name": "subagent", "arguments": {"action": "spawn", "agent": "payer", "timeout": 90,
                                                 "task": f"paying child {n}"}}
              for n in range(children)]
    parent_script = [{"match": "fan out", "turns": [
        {"tool_calls": spawns, "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 180}}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"text": "all paid", "usage": {"prompt_tokens": 100, "completion_tokens": 10}}]}]
    from zapcli.testing import ScriptedServer

    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(parent_script) as parent, \
            ScriptedServer(child_script, protocol="anthropic") as srv:
        work, config, home = Path(tmp) / "work", Path(tmp) / "config", Path(tmp) / "home"
        for folder in (work / ".zapcli" / "subagents", config, home):
            folder.mkdir(parents=True)
        (config / "config.yaml").write_text(
            f"backends:\n  claude:\n    command: {agent_cli('claude')}\n"
            "prices:\n  scripted: {input: 0.01, output: 0.01}\n", encoding="utf-8")
        (work / ".zapcli" / "subagents" / "payer.yaml").write_text(
            f"name: payer\ndescription: claude paying\ncli: claude\ntools: [bash, read]\n"
            f"model: {sonnet}\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZAPCLI_")}
        env.update(ZAPCLI_HOME=f"{tmp}/state", ZAPCLI_CONFIG_HOME=str(config), HOME=str(home),
                   OPENAI_BASE_URL=parent.base_url, ZAPCLI_MODEL="scripted",
                   OPENAI_API_KEY="sk-bench", ANTHROPIC_BASE_URL=srv.base_url,
                   ANTHROPIC_API_KEY="sk-ant-bench-0123456789", PYTHONPATH=str(REPO),
                   ZAPCLI_MAX_CONCURRENT=str(children))
        zapcli = [sys.executable, "-m", "zapcli"]
        subprocess.run([*zapcli, "trust"], env=env, cwd=work, check=True, capture_output=True)
        t0 = time.monotonic()
        out = subprocess.run([*zapcli, "run", "--max-cost", str(max_cost), "--approval", "full",
                              "--no-sandbox", "--json", "--", "fan out"], env=env, cwd=work,
                             capture_output=True, text=True, timeout=600)
        doc = json.loads(out.stdout)
    total, goal = doc["tree_tokens"]["cost_usd"], max_cost + children * one_call
    # what the provider bills: every request that reached it (its input is paid, even for
    # a call cut short) — an upper bound on the children's money, whatever zapcli counted
    billed = len(srv.requests) * one_call
    print(f"money, {children} Claude Code children spawned in one message, --max-cost "
          f"{max_cost:.2f}, calls of ${one_call:.4f}: tree total ${total:.4f} as zapcli counts "
          f"it, ${billed:.4f} as the provider bills {len(srv.requests)} child calls (goal <= "
          f"{max_cost:.2f} + {children} x {one_call:.4f} = ${goal:.4f}: "
          f"{'met' if max(total, billed) <= goal else 'NOT met'}); "
          f"{time.monotonic() - t0:.1f} s")


def _request_sizes(env: dict[str, str], usage: dict) -> list[int]:
    sizes = []
    for row in usage["subagents"]:
        trail = Path(env["ZAPCLI_HOME"]) / "subagents" / f"{row['id']}.jsonl"
        for line in trail.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "usage":
                sizes.append(rec["input_tokens"] + rec["output_tokens"])
    return sizes or [0]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--children", type=int, default=50)
    p.add_argument("--checks", type=int, default=2000)
    p.add_argument("--limit", type=int, default=60000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update(ZAPCLI_HOME=f"{tmp}/state", ZAPCLI_CONFIG_HOME=f"{tmp}/config")
        bench_check(a.children, a.checks)
    bench_overshoot(a.limit, 8)
    bench_money()


if __name__ == "__main__":
    main()
