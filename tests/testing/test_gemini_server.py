"""The scripted server's Gemini protocol. The google-genai SDK is not a
dependency, so the wire is checked with plain HTTP requests and, end to end,
with the real Gemini CLI 0.61 (which embeds the SDK)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tests.backends.gemini_harness import request, run_gemini
from tests.conftest import agent_cli
from zapcli.testing.gemini import NO_RULE_TEXT, conversation_key, schema_instance
from zapcli.testing.server import ScriptedServer

CONTEXT = "<session_context>\nToday is a day. Folder structure: ...\n</session_context>"


def body(task: str, system: str = "SYS", **extra: Any) -> dict[str, Any]:
    return {"systemInstruction": {"parts": [{"text": system}]},
            "contents": [{"role": "user", "parts": [{"text": CONTEXT}, {"text": task}]}], **extra}


def post(srv: ScriptedServer, path: str, data: dict[str, Any],
         headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(srv.root_url + path, json.dumps(data).encode(),
                                 {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def sse(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(ln[6:]) for ln in raw.decode().split("\n") if ln.startswith("data: ")]


STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
UNARY = "/v1beta/models/gemini-2.5-pro:generateContent"


def test_stream_has_thoughts_text_calls_then_finish_and_usage():
    script = [{"match": "do it", "turns": [{
        "reasoning": "think first", "text": "hello there, world",
        "tool_calls": [{"name": "read_file", "arguments": {"file_path": "a"}},
                       {"name": "glob", "arguments": "{\"pattern\": \"*\"}", "id": "c2"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "cached_tokens": 2,
                  "thoughts_tokens": 3}}]}]
    with ScriptedServer(script, protocol="gemini") as srv:
        status, raw = post(srv, STREAM, body("please do it"))
    assert status == 200
    chunks = sse(raw)
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p["text"] for p in parts if p.get("thought")) == "think first"
    assert "".join(p["text"] for p in parts if "text" in p and not p.get("thought")) == \
        "hello there, world"
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    assert calls == [{"name": "read_file", "args": {"file_path": "a"}},
                     {"name": "glob", "args": {"pattern": "*"}, "id": "c2"}]
    assert [c["candidates"][0].get("finishReason") for c in chunks][-1] == "STOP"
    assert all("usageMetadata" not in c for c in chunks[:-1])
    assert chunks[-1]["usageMetadata"] == {
        "promptTokenCount": 9, "candidatesTokenCount": 4, "thoughtsTokenCount": 3,
        "cachedContentTokenCount": 2, "totalTokenCount": 16}


def test_unary_count_tokens_and_models():
    script = [{"turns": [{"text": "one", "finish_reason": "length"}]}]
    with ScriptedServer(script, protocol="gemini", models=["gemini-2.5-pro"]) as srv:
        status, raw = post(srv, UNARY, body("q"))
        out = json.loads(raw)
        assert status == 200 and out["candidates"][0]["content"]["parts"] == [{"text": "one"}]
        assert out["candidates"][0]["finishReason"] == "MAX_TOKENS" and "usageMetadata" in out
        status, raw = post(srv, "/v1beta/models/gemini-2.5-pro:countTokens", body("q"))
        assert status == 200 and json.loads(raw)["totalTokens"] >= 1
        status, raw = post(srv, "/v1beta/models/other:generateContent", body("q"))
        assert status == 404 and json.loads(raw)["error"]["status"] == "NOT_FOUND"
        with urllib.request.urlopen(srv.root_url + "/v1beta/models", timeout=5) as resp:
            assert [m["name"] for m in json.load(resp)["models"]] == ["models/gemini-2.5-pro"]


def test_errors_in_googles_shape():
    script = [{"match": "rate", "turns": [
        {"http_error": {"status": 429, "message": "slow down", "retry_after_ms": 1500}},
        {"text": "ok now"}]},
        {"match": "midway", "turns": [{"text": "partial", "error_200": {"message": "boom"}}]}]
    with ScriptedServer(script, protocol="gemini", api_key="right") as srv:
        status, raw = post(srv, UNARY, body("rate me"), {"x-goog-api-key": "wrong"})
        assert status == 400 and "API key not valid" in json.loads(raw)["error"]["message"]
        status, raw = post(srv, UNARY, body("rate me"), {"x-goog-api-key": "right"})
        err = json.loads(raw)["error"]
        assert status == 429 and err["status"] == "RESOURCE_EXHAUSTED" and err["code"] == 429
        assert err["details"][0]["retryDelay"] == "1.5s"
        status, raw = post(srv, UNARY + "?key=right", body("rate me"))
        assert status == 200 and b"ok now" in raw
        status, raw = post(srv, STREAM + "&key=right", body("fail midway"))
    assert status == 200
    text, _, tail = raw.decode().rpartition("\n\n")
    assert "partial" in text and json.loads(tail)["error"] == {
        "code": 500, "message": "boom", "status": "INTERNAL"}


def test_json_utility_calls_never_take_script_turns():
    script = [{"turns": [{"text": "first"}, {"text": "second"}]}]
    schema = {"type": "object", "properties": {
        "reasoning": {"type": "string"}, "next_speaker": {"type": "string", "enum": ["user", "model"]},
        "score": {"type": "INTEGER"}, "confidence": {"type": "number"}}}
    with ScriptedServer(script, protocol="gemini") as srv:
        _, raw = post(srv, UNARY, body("t", generationConfig={"responseJsonSchema": schema}))
        answer = json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
        assert answer == {"reasoning": "scripted", "next_speaker": "user", "score": 1,
                          "confidence": 0}
        _, raw = post(srv, UNARY, body("t"))
        assert b"first" in raw  # the utility call above did not use turn 1
    assert schema_instance({"type": "ARRAY"}) == [] and schema_instance(None) == {}


def test_conversation_key_and_unmatched_requests():
    assert conversation_key(body("the task", "S")) == ("S", CONTEXT + "the task")
    with ScriptedServer([{"match": "known", "turns": [{"text": "x"}]}], protocol="gemini") as srv:
        status, raw = post(srv, STREAM, body("another task"))
        assert status == 400 and b"no rule matches" in raw
        status, raw = post(srv, UNARY, body("a side request"))
        assert status == 200 and NO_RULE_TEXT.encode() in raw


# -- end to end with the real CLI -----------------------------------------------------


def test_real_gemini_router_and_thoughts_leave_the_script_alone(tmp_path):
    gemini = agent_cli("gemini")
    script = [{"match": "count the files", "turns": [
        {"reasoning": "Let me look.", "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
        {"reasoning": "Found them.", "text": "There are no files."}]}]
    with ScriptedServer(script, protocol="gemini") as srv:  # no --model: "auto" routes first
        run = run_gemini(gemini, request(tmp_path, srv, "count the files", approval="confirm"))
        utility = [b for b in srv.requests if "responseJsonSchema" in (b.get("generationConfig") or {})]
    assert run.outcome is not None and run.outcome.status == "completed", run.stderr
    assert run.outcome.report == "There are no files."
    assert utility, "the CLI's model router asked for JSON"
    assert [t for t, _ in run.records].count("thinking") == 0  # stream-json drops thoughts
    [usage] = run.of("usage")
    assert len(usage["models"]) == 2  # the router's model and the routed one


def test_real_gemini_mid_stream_error_and_aborted_stream_fail_the_run(tmp_path):
    gemini = agent_cli("gemini")
    script = [{"match": "fail midway", "turns": [
        {"text": "partial answer", "error_200": {"message": "scripted mid-stream failure",
                                                 "code": 400}}]},
              {"match": "cut short", "turns": [
        {"raw": [{"candidates": [{"content": {"role": "model", "parts": [{"text": "par"}]}}]}],
         "close": "abort"},
        {"text": "never served"}]}]
    with ScriptedServer(script, protocol="gemini") as srv:
        mid = run_gemini(gemini, request(tmp_path / "a", srv, "fail midway", approval="full"))
        cut = run_gemini(gemini, request(tmp_path / "b", srv, "cut short", approval="full"))
    assert mid.outcome is not None and mid.outcome.status == "failed"
    assert "scripted mid-stream failure" in (mid.outcome.reason or "")
    assert mid.outcome.report == "partial answer"
    # a stream cut after content is not retried: the run fails with what came
    assert cut.outcome is not None and cut.outcome.status == "failed"
    assert "terminated" in (cut.outcome.reason or "") and cut.outcome.report == "par"
    print(f"aborted stream: failed after {cut.elapsed:.1f}s")


def test_the_printed_url_is_what_each_variable_takes(tmp_path):
    """Tryout: the gemini server printed `listening http://127.0.0.1:PORT/v1beta`,
    but GOOGLE_GEMINI_BASE_URL must be the root (the CLI adds /v1beta)."""
    import os
    import subprocess
    import sys

    with ScriptedServer([], protocol="gemini") as srv:
        assert srv.base_url == srv.root_url
    script = tmp_path / "s.json"
    script.write_text("[]")
    expected = {"chat": ("OPENAI_BASE_URL", "/v1"), "responses": ("OPENAI_BASE_URL", "/v1"),
                "anthropic": ("ANTHROPIC_BASE_URL", ""), "gemini": ("GOOGLE_GEMINI_BASE_URL", "")}
    for protocol, (variable, tail) in expected.items():
        proc = subprocess.Popen([sys.executable, "-m", "zapcli.testing.scripted_server",
                                 "--protocol", protocol, "--script", str(script)],
                                stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": os.getcwd()})
        try:
            first = proc.stdout.readline().strip()
            second = proc.stdout.readline().strip()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        url = first.split(" ", 1)[1]
        assert url.startswith("http://127.0.0.1:") and url.rsplit(":", 1)[1].lstrip("0123456789") == tail
        assert second.startswith(f"use: {variable}={url}"), (protocol, second)
