"""A built-in agent whose model endpoint answers 429 because an allowance is
spent, not because of a rate (new user, round 5: it parked on the 429,
asking again and again with back-off, until its deadline): OpenAI's
`insufficient_quota` and an account's usage limit in a provider's words end
it at once, saying why — a usage limit with its reset, as an agent CLI's is
(`usage_limit` on its status, what `--resume-after-limit` waits for). A
plain rate limit still parks and tries again (tests/e2e/test_agent.py).

Real runner, real SDK, a scripted Chat Completions server on 127.0.0.1; the
outside effect is the number of requests the server got, and the end."""

from __future__ import annotations

import time
from datetime import datetime, timezone

QUOTA = {"status": 429, "times": 50, "type": "insufficient_quota", "code": "insufficient_quota",
         "message": "You exceeded your current quota, please check your plan and billing details."}


def test_insufficient_quota_ends_the_agent_at_once_with_what_to_do(zap, model):
    srv = model([{"turns": [{"http_error": QUOTA}, {"text": "never reached"}]}])
    started = time.monotonic()
    sid = zap("spawn", "--timeout", "60", "check the quota", check=True).out.strip()
    assert zap.wait_status(sid, timeout=60) == "failed"
    took = time.monotonic() - started
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert len(srv.requests) == 1, len(srv.requests)  # asked once: waiting helps nothing
    assert took < 40, took  # not parked to its 60 s deadline
    assert "insufficient_quota" in doc["reason"] and "add credit" in doc["reason"], doc["reason"]
    assert "You exceeded your current quota" in doc["reason"]


def test_a_providers_usage_limit_ends_the_agent_with_its_reset(zap, model):
    reset = int(time.time()) + 5 * 3600
    stamp = datetime.fromtimestamp(reset, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    limit = {"status": 429, "times": 50, "code": "1308",
             "message": f"Usage limit reached for 5 hour. Your limit will reset at {stamp}"}
    srv = model([{"turns": [{"http_error": limit}, {"text": "never reached"}]}])
    sid = zap("spawn", "--timeout", "60", "over the plan", check=True).out.strip()
    assert zap.wait_status(sid, timeout=60) == "failed"
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert len(srv.requests) == 1, len(srv.requests)
    assert doc["reason"].startswith("usage limit, resets "), doc["reason"]
    assert "Usage limit reached for 5 hour" in doc["reason"]
    assert doc["usage_limit"]["resets_at"] == reset and doc["usage_limit"]["cli"] == "zapcli", doc


def test_a_plain_rate_limit_still_parks_and_goes_on(zap, model):
    srv = model([{"turns": [{"http_error": {"status": 429, "times": 2, "retry_after_ms": 50}},
                            {"text": "after the wait"}]}])
    sid = zap("spawn", "--timeout", "60", "rate limited", check=True).out.strip()
    assert zap.wait_status(sid, timeout=60) == "completed"
    assert len(srv.requests) == 3
    assert zap("output", sid).out.strip() == "after the wait"
