"""The JSON contract: for every command, the keys scripts rely on (docs/explanation/rules.md#commands:
one document, stable snake_case keys). A key may be added, never removed or
renamed without a test changing here."""

from __future__ import annotations

import re

import pytest

from zapcli.testing import ScriptedServer

VIEW = {"id", "status", "session", "cli", "agent", "task", "created", "reason", "exit_code",
        "elapsed_s", "stalled_s", "pid", "report", "input_tokens", "output_tokens",
        "cached_tokens", "pending_approval", "undelivered_messages", "stdout_written",
        "stderr_written", "after", "ended", "task_bytes", "terminal"}
ERROR = {"code", "message", "exit_code"}


def has(doc: dict, keys: set[str]) -> None:
    missing = keys - set(doc)
    assert not missing, f"missing keys {sorted(missing)} in {sorted(doc)}"
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", k) for k in doc), sorted(doc)


@pytest.fixture
def agent(zap):
    srv = ScriptedServer([{"match": "ask first", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}, {"text": "done"}]}])
    srv.start()
    zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY="sk-contract-1")
    yield srv
    srv.stop()


def test_spawn_poll_wait_list_output_replay_kill(zap):
    import json

    spawned = json.loads(zap("spawn", "--json", "--cli", "sh", "--", "echo hi").stdout)
    has(spawned, {"id", "status", "cli", "agent", "task", "created", "warnings"})
    sid = spawned["id"]
    waited = zap.json("wait", sid, "--timeout", "30")
    has(waited, {"timed_out", "waited_s", "exit_code", "subagents"})
    has(waited["subagents"][0], VIEW)
    polled = zap.json("poll", "--no-wait", sid)
    has(polled, {"waited_s", "all_running", "subagents"})
    has(polled["subagents"][0], VIEW | {"error", "output", "stderr_tail"})
    has(polled["subagents"][0]["output"], {"head", "tail", "folded_bytes", "kept_bytes",
                                           "written_bytes", "truncated", "missing"})
    listed = zap.json("list")
    has(listed, {"session", "all_sessions", "count", "subagents", "active_in_other_sessions",
                 "in_other_sessions", "more"})
    has(listed["subagents"][0], VIEW)
    has(zap.json("output", sid), {"id", "stream", "bytes", "written_bytes", "truncated", "text"})
    replayed = zap.json("replay", sid)
    has(replayed, {"id", "records", "corrupt_lines", "torn_tail_bytes"})
    has(replayed["records"][0], {"v", "seq", "ts", "type"})
    killed = zap.json("kill", sid)
    has(killed, {"subagents"})
    has(killed["subagents"][0], {"id", "outcome", "pid", "signals", "error"})


def test_errors_are_one_document(zap):
    bad = zap("poll", "--no-wait", "--json", "sa_20260101_deadbeef")
    assert bad.returncode == 1
    import json

    doc = json.loads(bad.stdout)
    has(doc["subagents"][0], {"id", "error"})
    refused = zap("spawn", "--json", "--cli", "nope", "--", "x")
    has(json.loads(refused.stdout)["error"], ERROR)


def test_session_gc_usage_doctor_agents_tool_schema(zap):
    has(zap.json("session"), {"session", "source"})
    has(zap.json("gc", "--dry-run"), {"dry_run", "kept", "deleted", "trimmed", "skipped_reason"})
    has(zap.json("usage"), {"sessions"})
    has(zap.json("doctor"), {"ok", "checks"})
    agents = zap.json("agents", "list")
    has(agents, {"agents", "diagnostics"})
    has(agents["agents"][0], {"name", "layer", "source", "enabled", "model", "valid",
                              "diagnostics", "grant_diagnostics"})
    has(zap.json("agents", "show", "explorer"), {"agent", "definition", "model_override",
                                                 "diagnostics", "grant_diagnostics"})
    schema = zap.json("tool-schema")
    has(schema, {"type", "function"})


def test_send_approve_and_usage_of_an_agent(zap, agent):
    sid = zap.json("spawn", "ask first")["id"]

    def pending():
        doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
        return doc if doc["status"] == "awaiting_approval" else None

    from tests.conftest import wait_until

    doc = wait_until(pending, 30)
    has(doc["pending_approval"], {"req_id", "tool", "summary"})
    has(zap.json("send", sid, "keep going"), {"id", "steer_id", "delivered", "status"})
    has(zap.json("approve", sid), {"id", "req_id", "decision", "tool", "summary"})
    assert zap("wait", sid, "--timeout", "30").returncode == 0
    sessions = zap.json("usage")["sessions"]
    has(sessions[0], {"session", "own", "total", "subagents"})
    has(sessions[0]["total"], {"input_tokens", "output_tokens", "cached_tokens"})
