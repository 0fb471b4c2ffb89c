"""Rate limits park a subagent instead of failing it (docs/explanation/rules.md#budgets, issue 19): a
429 or an overloaded answer shows `running (rate-limited, retry in Ns)`, the
wait honours Retry-After, and while several subagents of a session are parked
on one provider its next ones wait in the queue, saying why."""

from __future__ import annotations

from tests.conftest import record_of, wait_until


def _said(zap, sid: str) -> str:
    return zap("poll", "--no-wait", sid).out


def test_a_429_parks_the_subagent_until_retry_after_then_it_completes(zap, model):
    model([{"match": "limited", "turns": [
        {"http_error": {"status": 429, "retry_after": 3}},
        {"text": "done after the limit"}]}])
    sid = zap("spawn", "--", "limited work").out.strip()
    wait_until(lambda: "running (rate-limited, retry in" in _said(zap, sid), timeout=20)
    assert "rate-limited" in zap("list").out
    assert zap.wait_status(sid, timeout=30) == "completed"
    parked = record_of(zap, sid, "rate_limit")
    assert parked["status"] == 429 and parked["retry_in_s"] >= 3 and parked["attempt"] == 1
    assert "done after the limit" in _said(zap, sid)


def test_several_parked_on_one_provider_hold_the_next_start(zap, model):
    model([{"match": "overloaded", "turns": [
        {"http_error": {"status": 529, "retry_after": 8}},  # long enough for a loaded machine
        {"text": "back"}]},
        {"match": "third", "turns": [{"text": "third done"}]}])
    first = zap("spawn", "--", "overloaded one").out.strip()
    second = zap("spawn", "--", "overloaded two").out.strip()
    for sid in (first, second):
        wait_until(lambda sid=sid: "rate-limited" in _said(zap, sid), timeout=20)
    third = zap("spawn", "--", "the third").out.strip()
    held = _said(zap, third)
    assert "queued (waiting: http://127.0.0.1:" in held and "is rate-limiting 2 subagents" in held, held
    for sid in (first, second, third):
        assert zap.wait_status(sid, timeout=40) == "completed"
    assert record_of(zap, first, "rate_limit")["status"] == 529
    assert record_of(zap, third, "held")["reason"].endswith("rate-limiting 2 subagents of this session")
