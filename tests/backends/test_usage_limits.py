"""C42: an agent CLI stopped by its account's usage limit (issue 30 item 1).

The real pinned CLIs against scripted servers that answer the way each
provider answers a usage limit, so each CLI prints its own message: Claude
Code's unified rate-limit headers on a subscription token ("You've hit your
5-hour limit · resets 7:53pm (Europe/Warsaw)"), Codex's `usage_limit_reached`
body ("… or try again at 7:53 PM."), the Gemini API's daily quota, and the
5-hour limit of a coding plan behind an OpenAI-compatible endpoint
("Usage limit reached for 5 hour. Your limit will reset at …", Z.ai's words,
its clock in UTC+8) for qwen, opencode and pi.

What must hold: the subagent ends with a distinct reason carrying the reset
time (poll, list, `--json`, the parent's notice); new spawns for that CLI
and account wait in the queue until the reset; nothing resumes by itself
unless `--resume-after-limit` asked; `continue` works after the reset.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from tests.backends import clitest as ct
from tests.conftest import wait_until
from zapcli.testing.server import ScriptedServer

WARSAW = ZoneInfo("Europe/Warsaw")
OAUTH = "sk-ant-oat01-scripted-subscription-0123456789"
OTHER_OAUTH = "sk-ant-oat01-another-account-9876543210"


def claude_limit(reset: int, claim: str = "five_hour", times: int = 100) -> dict:
    """Anthropic's answer to a subscription past its limit, until it resets: a
    429 whose unified rate-limit headers say rejected, which limit, and when."""
    return {"http_error": {"status": 429, "times": times, "until": reset, "message": "Rate limited",
                           "headers": {"anthropic-ratelimit-unified-status": "rejected",
                                       "anthropic-ratelimit-unified-reset": str(reset),
                                       "anthropic-ratelimit-unified-representative-claim": claim}}}


def claude_env(srv: ScriptedServer, token: str = OAUTH) -> dict[str, str]:
    """A subscription's token (`claude setup-token`), in Warsaw."""
    return {"ANTHROPIC_BASE_URL": srv.base_url, "CLAUDE_CODE_OAUTH_TOKEN": token,
            "ANTHROPIC_API_KEY": "", "TZ": "Europe/Warsaw"}


def hhmm(epoch: float, zone: ZoneInfo = WARSAW) -> str:
    """The reset as a person reads it now: `00:31` on today's date in `zone`,
    `Dec 6 00:31` on another day (a reset hours ahead is tomorrow in the
    evening). Read when asserting: the day is the one of the look."""
    at = datetime.fromtimestamp(epoch, zone)
    today = datetime.now(zone).date()
    return at.strftime("%H:%M") if at.date() == today else f"{at:%b} {at.day} {at:%H:%M}"


def view(zap, sid: str) -> dict:
    return zap.json("poll", "--no-wait", sid)["subagents"][0]


def test_claude_session_limit_ends_with_the_reset_and_holds_the_next_spawns(zap):
    reset = int(time.time()) + 3 * 3600
    script = [{"match": "first over the limit", "turns": [claude_limit(reset)]},
              {"match": "other account", "turns": [{"text": "the other account works"}]}]
    with ScriptedServer(script, protocol="anthropic") as srv:
        ct.configure(zap, "claude")
        env = claude_env(srv)
        sid = ct.spawn(zap, "claude", "first over the limit", env)
        assert zap.wait_status(sid, timeout=90) == "failed", ct.dump(zap, sid)
        doc = view(zap, sid)
        limit = doc["usage_limit"]
        assert limit["cli"] == "claude" and limit["resets_at"] == reset, doc
        assert limit["zone"] == "Europe/Warsaw"
        assert "You've hit your 5-hour limit" in limit["message"]  # claude's own words
        assert doc["reason"].startswith(f"usage limit, resets {hhmm(reset)} Europe/Warsaw"), doc["reason"]
        assert f"usage limit, resets {hhmm(reset)} Europe/Warsaw" in zap("poll", "--no-wait", sid).out
        assert f"usage limit, resets {hhmm(reset)} Europe/Warsaw" in zap("list").out
        # the next spawn for that CLI and account waits for the reset, saying so
        held = ct.spawn(zap, "claude", "second, same account", env)
        wait_until(lambda: f"queued (claude usage limit, resets {hhmm(reset)})"
                   in zap("poll", "--no-wait", held).out, timeout=20)
        assert f"queued (claude usage limit, resets {hhmm(reset)})" in zap("list").out
        time.sleep(2)
        assert view(zap, held)["status"] == "queued" and not ct.records(zap, held, "process")
        # the trail's shapes the event hooks derive `usage_limited` from: the end carries
        # `usage_limit` {cli, message, resets_at}; the queued one a `held` record of kind usage_limit
        end = ct.records(zap, sid, "status")[-1]["usage_limit"]
        assert (end["cli"], end["resets_at"]) == ("claude", reset) and end["message"], end
        kept = ct.records(zap, held, "held")[-1]
        assert (kept["kind"], kept["cli"], kept["until"]) == ("usage_limit", "claude", reset), kept
        assert "You've hit your 5-hour limit" in kept["message"]
        # another account is not held back
        free = ct.spawn(zap, "claude", "other account please", claude_env(srv, OTHER_OAUTH))
        assert zap.wait_status(free, timeout=90) == "completed", ct.dump(zap, free)
        assert view(zap, held)["status"] == "queued"
        assert ct.secret_leaks(zap, sid, OAUTH) == [] and ct.secret_leaks(zap, held, OAUTH) == []
        zap("kill", held)


def test_the_parent_is_told_the_reset(zap, model):
    reset = int(time.time()) + 2 * 3600
    parent = model([
        {"match": "delegate", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {
                "action": "spawn", "agent": "limited", "task": "child over the limit"}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 90}}]},
            {"text": "parent done"}]}])
    with ScriptedServer([{"match": "child over the limit", "turns": [claude_limit(reset)]}],
                        protocol="anthropic") as srv:
        ct.configure(zap, "claude")
        ct.cli_definition(zap, "limited", "claude", ["read"])
        proc = zap("run", "--approval", "full", "--no-sandbox", "--json", "--", "delegate",
                   env=claude_env(srv), timeout=150)
        assert proc.returncode == 0, proc.err
    told = json.dumps(parent.requests[-1]["messages"])
    assert f"usage limit, resets {hhmm(reset)} Europe/Warsaw" in told, told[-2000:]


def held_limit() -> dict:
    """`claude_limit` answered once the test says when it resets: held (`limit`), its
    reset header the `{reset}` variable, its `until` set on the rule meanwhile."""
    turn = claude_limit(0)
    turn["http_error"].update(until=None, headers={
        **turn["http_error"]["headers"], "anthropic-ratelimit-unified-reset": "{reset}"})
    return {**turn, "hold": "limit"}


def test_continue_after_the_reset_and_resume_after_limit(zap):
    script = [{"match": "asked to go on", "turns": [held_limit(),
                                                   {"text": "went on after the reset"}]},
              {"match": "resumes by itself", "turns": [held_limit(),
                                                      {"text": "resumed after the reset"}]}]
    with ScriptedServer(script, protocol="anthropic") as srv:
        ct.configure(zap, "claude")
        env = claude_env(srv)
        plain = ct.spawn(zap, "claude", "asked to go on", env)
        auto = ct.spawn(zap, "claude", "resumes by itself", env, "--resume-after-limit")
        # the reset is 15 s after both have asked (their start-up, slow on a loaded
        # machine, is not what this test waits for): time for the holds to be seen
        wait_until(lambda: all(any(task in json.dumps(r["messages"]) for r in srv.requests)
                               for task in ("asked to go on", "resumes by itself")), timeout=90)
        reset = int(time.time()) + 15
        srv.variables["reset"] = str(reset)
        for rule in srv.rules:
            rule["turns"][0]["http_error"]["until"] = reset
        srv.release("limit")
        for sid in (plain, auto):
            assert zap.wait_status(sid, timeout=90) == "failed", ct.dump(zap, sid)
            assert view(zap, sid)["usage_limit"]["resets_at"] == reset
        # the one that asked: its continuation is queued until the reset
        later = wait_until(lambda: view(zap, auto).get("continued_by"), timeout=30)
        # the queue says the hold at its first look after the continuation is queued
        wait_until(lambda: "claude usage limit" in zap("poll", "--no-wait", later).out, timeout=15)
        # the other is not resumed by itself; the person continues it, which waits too
        proc = zap("continue", plain, "go on", env=env)
        assert proc.returncode == 0, proc.err
        mine = proc.out.strip()
        assert view(zap, mine)["status"] == "queued"
        assert time.time() < reset, "the reset came before the holds could be seen"
        for sid, said in ((mine, "went on after the reset"), (later, "resumed after the reset")):
            assert zap("wait", sid, "--timeout", "120", env=env).returncode == 0, ct.dump(zap, sid)
            assert said in (view(zap, sid)["report"] or "")
            assert min(r["mono"] for r in ct.records(zap, sid, "process")) > 0
            started = ct.records(zap, sid, "process")[0]["ts"]
            assert datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp() >= reset
        # nothing else was started: one continuation each, the first by the person
        assert view(zap, plain)["continued_by"] == mine
        sessions = zap.json("list", "--all")["subagents"]
        assert len(sessions) == 4, [s["id"] for s in sessions]


OPENAI_PLAN = "Usage limit reached for 5 hour. Your limit will reset at {at}"


def _plan_body(cli: str, at: str) -> dict:
    """Z.ai's own body ({code, message}); opencode gets it as an OpenAI-compatible
    gateway passes it on, with an error type (opencode 1.18.33 answers the bare
    one with "Unexpected server error", whatever it says)."""
    error = {"code": "1308", "message": OPENAI_PLAN.format(at=at)}
    return {"error": {**error, "type": "rate_limit_error"} if cli == "opencode" else error}


@pytest.mark.parametrize("cli", ["codex", "gemini", "qwen", "opencode", "pi"])
def test_each_cli_says_its_usage_limit_and_the_next_spawn_waits(zap, cli):
    now = time.time()
    reset = int(now) + 2 * 3600 + 1800
    if cli == "codex":
        answer = {"status": 429, "times": 500, "body": {"error": {
            "type": "usage_limit_reached", "message": "The usage limit has been reached",
            "plan_type": "plus", "resets_at": reset, "resets_in_seconds": reset - int(now)}}}
        reset -= reset % 60  # codex says the minute: "try again at 7:53 PM"
    elif cli == "gemini":
        answer = {"status": 429, "times": 500, "body": {"error": {
            "code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "You exceeded your current quota, please check your plan and billing "
                       "details.\n* Quota exceeded for metric: generativelanguage.googleapis.com"
                       "/generate_content_free_tier_requests, limit: 250, model: gemini-2.5-flash"
                       f"\nPlease retry in {reset - int(now)}s.",
            "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                 "retryDelay": f"{reset - int(now)}s"}]}}}
    else:  # a coding plan's 5-hour limit behind an OpenAI-compatible endpoint (UTC+8)
        at = datetime.fromtimestamp(reset, ZoneInfo("Asia/Shanghai")).strftime("%Y-%m-%d %H:%M:%S")
        answer = {"status": 429, "times": 500, "body": _plan_body(cli, at)}
    script = [{"match": "over the limit", "turns": [{"http_error": answer}]}]
    with ScriptedServer(script, protocol=ct.PROTOCOL[cli]) as srv:
        ct.configure(zap, cli)
        env = {**ct.cli_env(cli, srv), "TZ": "Europe/Warsaw"}
        sid = ct.spawn(zap, cli, "over the limit", env, "--approval", "full")  # opencode: see
        # tests/backends/test_usage_shapes.py
        assert zap.wait_status(sid, timeout=150) == "failed", ct.dump(zap, sid)
        doc = view(zap, sid)
        limit = doc.get("usage_limit")
        assert limit and limit["cli"] == cli, (doc, ct.dump(zap, sid))
        assert abs(limit["resets_at"] - reset) <= (90 if cli == "gemini" else 1), (limit, reset)
        assert doc["reason"].startswith("usage limit, resets "), doc["reason"]
        held = ct.spawn(zap, cli, "the next one", env)
        wait_until(lambda: f"queued ({cli} usage limit, resets " in zap("poll", "--no-wait", held).out,
                   timeout=20)
        zap("kill", held)
