"""A damaged trail whose usage records carry negative token counts or cost
(issue 28, the chaos round): they count as nothing, never subtract — not in
poll, replay, the span export, nor in what a budget sees spent."""

from __future__ import annotations

from zapcli.trail import store

BAD = {"input_tokens": -1000000, "output_tokens": -7, "cached_tokens": -3,
       "cache_write_tokens": -2, "cost_usd": -5.0}


def _damaged(zap) -> str:
    sid = zap.spawn_sh("true")
    assert zap("wait", "--timeout", "30", sid).returncode == 0
    path = zap.trail(sid)
    store.append(path, "usage", {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5},
                 sync=False)
    store.append(path, "usage", BAD, sync=False)
    return sid


def test_negative_usage_counts_as_nothing(zap):
    sid = _damaged(zap)
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    figures = {k: v for k, v in doc.items() if k.endswith("tokens") or k == "cost_usd"}
    tokens = doc.get("tokens") or {}
    for value in [*figures.values(), *(tokens.values() if isinstance(tokens, dict) else [])]:
        assert value is None or value >= 0, doc
    replayed = zap.json("replay", sid)
    shown = replayed.get("tokens") or {}
    assert shown.get("input_tokens") == 100 and shown.get("output_tokens") == 10, shown
    assert shown.get("cost_usd") == 0.5, shown


def test_a_budget_meter_never_counts_negative_spend(zap):
    from zapcli.budget.tree import UsageTail

    sid = _damaged(zap)
    tokens, cost = UsageTail(sid).read()
    assert (tokens, cost) == (110, 0.5)
