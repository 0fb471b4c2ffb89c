"""Money (docs/explanation/rules.md#budgets, issue 19): `--max-cost USD` on spawn and run, cost from the
backend or a price (`prices:` in config.yaml, else the genai-prices library),
an unpriced model refused at spawn, and cost shown per subagent, tree and
session."""

from __future__ import annotations

import json

import pytest

from zapcli.money import dollars


def _prices(zap, text: str) -> None:
    cfg = zap.home.parent / "config"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "config.yaml").write_text(text)


def test_a_dollar_budget_on_an_unpriced_model_is_refused_at_spawn(zap, model):
    model([{"turns": [{"text": "x"}]}])
    for args in (("spawn", "--max-cost", "0.5", "--", "priced work"),
                 ("run", "--max-cost", "0.5", "--", "priced work")):
        proc = zap(*args)
        assert proc.returncode in (1, 2), (args, proc.out, proc.err)
        assert "no price is known for model `scripted`" in proc.err and "prices:" in proc.err
        # where that config.yaml is (ZAPCLI_CONFIG_HOME here), not only its name
        assert f"{zap.home.parent / 'config' / 'config.yaml'}" in proc.err, proc.err
    folder = zap.home / "subagents"
    assert not folder.exists() or not list(folder.glob("*.jsonl"))  # nothing was created
    # nor a run: a usage error leaves no run ended `failed` behind (new user, round 5)
    for args in (("--max-tokens", "0"), ("--max-subagents", "-1"), ("--max-cost", "0.5")):
        proc = zap("run", *args, "--", "priced work")
        assert proc.returncode == 2, (args, proc.out, proc.err)
    runs = zap.home / "runs"
    assert not runs.exists() or not list(runs.glob("*.jsonl")), sorted(runs.glob("*"))
    assert "priced work" not in zap("list", "--all").out


def test_run_max_cost_holds_and_usage_shows_cost_per_subagent_tree_and_session(zap, model):
    _prices(zap, "prices:\n  scripted: {input: 1.0, output: 2.0}\n")  # dollars per million tokens
    model([
        {"match": "fan out", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": f"child {n} pays"}}
                            for n in (1, 2)], "usage": {"prompt_tokens": 900, "completion_tokens": 100}},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}],
             "usage": {"prompt_tokens": 900, "completion_tokens": 100}},
            {"text": "done", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}]},
        {"match": "pays", "loop": True, "turns": [
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}],
             "usage": {"prompt_tokens": 2000, "completion_tokens": 500}}]}])
    proc = zap("run", "--max-cost", "0.02", "--json", "--", "fan out", timeout=120)
    doc = json.loads(proc.stdout)
    tree = doc["tree_tokens"]["cost_usd"]
    per_request = 2000 * 1e-6 + 500 * 2e-6  # $0.003
    assert tree <= 0.02 + per_request, doc
    assert doc["tokens"]["cost_usd"] == pytest.approx(3 * (900e-6 + 200e-6))
    env = {"ZAPCLI_SESSION": doc["run_id"]}
    session = zap.json("usage", env=env)["sessions"][0]
    assert session["tree"]["cost_usd"] == pytest.approx(tree) and session["max_cost"] == 0.02
    for sid in doc["subagents"]:
        child = zap.json("poll", "--no-wait", sid, env=env)["subagents"][0]
        assert child["reason"].startswith("cost budget: $"), child  # dollars: not "token budget"
        row = next(s for s in session["subagents"] if s["id"] == sid)
        assert row["cost_usd"] == pytest.approx(child["cost_usd"]) and child["cost_usd"] > 0
    text = zap("usage", env=env).out
    assert f"{dollars(tree)} of $0.02 (" in text, text


def test_a_run_stopped_by_its_dollar_budget_says_cost_budget(zap, model):
    """A run whose next call would pass its --max-cost ends saying "cost
    budget: $… of $…" (it said "token budget: $0.0165 of $0.03")."""
    _prices(zap, "prices:\n  scripted: {input: 1.0, output: 2.0}\n")
    model([{"match": "spend alone", "loop": True, "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}],
         "usage": {"prompt_tokens": 9000, "completion_tokens": 1000}}]}])
    proc = zap("run", "--max-cost", "0.02", "--json", "--", "spend alone", timeout=120)
    doc = json.loads(proc.stdout)
    assert doc["status"] == "failed" and doc["reason"].startswith("cost budget: $"), doc
    assert "token" not in doc["reason"].split(":")[0] and "of $0.02" in doc["reason"], doc


def test_the_price_library_prices_a_known_model(zap, model):
    """No `prices:` entry: genai-prices knows gpt-4o-mini."""
    from genai_prices import Usage, calc_price

    model([{"match": "library", "turns": [
        {"text": "ok", "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 400}}]}])
    sid = zap("spawn", "--model", "gpt-4o-mini", "--max-cost", "1", "--", "library priced").out.strip()
    assert zap.wait_status(sid, timeout=30) == "completed"
    got = zap.json("poll", "--no-wait", sid)["subagents"][0]["cost_usd"]
    want = float(calc_price(Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=400),
                            "gpt-4o-mini").total_price)
    assert got == pytest.approx(want) and got > 0


def test_a_first_call_that_passes_the_budget_alone_is_said_as_passed(zap, model):
    """A new user's finding: a first call larger than the whole --max-cost
    ended "… $0.015 of its $0.01 spent, and the next model call (about
    $0.0152) would pass it" — it had passed it already."""
    _prices(zap, "prices:\n  scripted: {input: 1.0, output: 2.0}\n")
    model([{"match": "spend big", "loop": True, "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}],
         "usage": {"prompt_tokens": 13000, "completion_tokens": 1000}}]}])
    sid = zap("spawn", "--max-cost", "0.01", "--", "spend big").out.strip()
    assert zap.wait_status(sid, timeout=60) == "failed"
    reason = zap.json("poll", "--no-wait", sid)["subagents"][0]["reason"]
    assert reason.startswith("cost budget: $0.015 of its $0.01 spent: the last model call "
                             "passed it"), reason
    assert "would pass it" not in reason, reason
