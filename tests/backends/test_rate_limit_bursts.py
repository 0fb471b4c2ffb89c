"""C43: a burst of 429s at fan-out start fails no child that did no work
(issue 30 item 2). The real Claude Code and Codex CLIs against scripted
servers that answer the first requests of each conversation with 429.

An agent-CLI child that ended with 0 tokens on a 429 (or an overloaded
answer) is requeued once — the same id goes back to the queue — and the
endpoint's concurrency in this session is halved, the reason shown on the
queued rows, until a child on that endpoint succeeds. One that fails the
same way again is failed, saying it was requeued once.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.backends import clitest as ct
from zapcli.testing.server import ScriptedServer

CHILDREN = 4


def _halved(seen: set[str]) -> list[str]:
    """The queued rows' reasons that say the endpoint was halved for a 429."""
    return [w for w in seen if "429" in w and "2 at a time" in w]


def _config(zap, cli: str, cap: int) -> None:
    ct.configure(zap, cli, extra=f"max_concurrent: {cap}\n")


def test_a_429_burst_at_fan_out_requeues_and_halves_the_endpoint(zap):
    script = [{"match": f"burst child {n}", "turns": [
        {"http_error": {"status": 429, "times": 2, "message": "Number of concurrent connections "
                        "has exceeded your rate limit", "retry_after_ms": 10}},
        {"delay_s": 1, "text": f"child {n} done"}]} for n in range(CHILDREN)]
    with ScriptedServer(script, protocol="anthropic") as srv:
        _config(zap, "claude", CHILDREN)
        env = {**ct.cli_env("claude", srv), "CLAUDE_CODE_MAX_RETRIES": "1"}
        ids = [ct.spawn(zap, "claude", f"burst child {n}", env) for n in range(CHILDREN)]
        seen: set[str] = set()
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            rows = zap.json("list")["subagents"]
            for row in rows:
                if row["status"] == "queued" and row.get("waiting_for"):
                    seen.add(row["waiting_for"])
            if all(r["status"] not in ("queued", "running") for r in rows if r["id"] in ids):
                break
            if _halved(seen):  # what a queued row says is seen: the rest is one blocking wait
                zap("wait", "--timeout", str(int(deadline - time.monotonic()) + 1), *ids,
                    timeout=deadline - time.monotonic() + 60)
                break
            time.sleep(0.2)
        for sid in ids:
            doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
            assert doc["status"] == "completed", ct.dump(zap, sid)
            [requeued] = ct.records(zap, sid, "requeued")
            assert "429" in requeued["reason"] and requeued["attempt"] == 1
            assert len(ct.records(zap, sid, "process")) == 2
        halved = _halved(seen)
        assert halved, seen  # the queued rows said why they waited
        assert srv.base_url in halved[0]  # the endpoint is named


def test_requeued_once_then_failed_when_the_429s_go_on(zap):
    script = [{"match": "always limited", "turns": [
        {"http_error": {"status": 429, "times": 500, "message": "Rate limit reached",
                        "code": "rate_limit_exceeded", "retry_after_ms": 10}}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        _config(zap, "codex", 4)
        sid = ct.spawn(zap, "codex", "always limited", ct.cli_env("codex", srv))
        assert zap.wait_status(sid, timeout=120) == "failed", ct.dump(zap, sid)
        doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
        assert len(ct.records(zap, sid, "requeued")) == 1
        assert "429" in doc["reason"] and "requeued once" in doc["reason"], doc["reason"]


def test_a_child_that_did_work_is_not_requeued(zap):
    bash = {"name": "Bash", "arguments": {"command": "echo worked", "description": "echo"}}
    script = [{"match": "worked first", "turns": [
        {"tool_calls": [bash], "usage": {"prompt_tokens": 500, "completion_tokens": 20}},
        {"http_error": {"status": 429, "times": 50, "message": "Rate limited",
                        "retry_after_ms": 10}}]}]
    with ScriptedServer(script, protocol="anthropic") as srv:
        _config(zap, "claude", 4)
        env = {**ct.cli_env("claude", srv), "CLAUDE_CODE_MAX_RETRIES": "1"}
        sid = ct.spawn(zap, "claude", "worked first", env, "--approval", "full")
        assert zap.wait_status(sid, timeout=120) == "failed", ct.dump(zap, sid)
        assert ct.records(zap, sid, "requeued") == []
        assert Path(zap.trail(sid)).exists()
