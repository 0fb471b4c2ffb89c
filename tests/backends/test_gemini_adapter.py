"""The Gemini adapter and parser, proven against the real Gemini CLI 0.61
(headless, stream-json) and a scripted Gemini API server on 127.0.0.1; and
the parser on real captured streams (fixtures/gemini/)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tests.backends.gemini_harness import API_KEY, request, run_gemini
from tests.conftest import agent_cli
from zapcli.backends.clis.base import McpServer
from zapcli.backends.clis.gemini import GeminiBackend, GeminiParser, core_tools
from zapcli.testing.server import ScriptedServer

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
MCP_SERVER = Path(__file__).parents[1] / "capabilities" / "fixtures" / "mcp_server.py"

TOOL_SCRIPT = [{"match": "say hi through the shell", "turns": [
    {"text": "Running it.", "tool_calls": [{"name": "run_shell_command", "arguments": {
        "command": "echo hi", "description": "print hi"}}],
     "usage": {"prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": 40,
               "thoughts_tokens": 5}},
    {"text": "The command printed hi. DONE", "usage": {"prompt_tokens": 120, "completion_tokens": 7}},
]}]


def main_requests(srv: ScriptedServer) -> list[dict]:
    """The agent's own requests (the router's JSON calls left out)."""
    return [b for b in srv.requests if "responseJsonSchema" not in (b.get("generationConfig") or {})]


def test_real_gemini_tool_turn_with_full_approval(tmp_path):
    gemini = agent_cli("gemini")
    with ScriptedServer(TOOL_SCRIPT, protocol="gemini", api_key=API_KEY) as srv:
        req = request(tmp_path, srv, "Please say hi through the shell.", approval="full",
                      model="gemini-2.5-flash", prompt="DEFINITION-PROMPT-MARKER: be brief.")
        run = run_gemini(gemini, req)
    assert run.outcome is not None and run.outcome.status == "completed", (run.stderr, run.lines)
    assert "Please say hi" not in " ".join(run.launch.argv)  # the task went to stdin
    assert run.parser is not None and run.parser.session_id
    calls, results = run.of("tool_call"), run.of("tool_result")
    assert [c["name"] for c in calls] == ["run_shell_command"]
    assert calls[0]["arguments"]["command"] == "echo hi"
    assert [r["call_id"] for r in results] == [calls[0]["call_id"]] and results[0]["ok"]
    assert results[0]["content"].strip() == "hi"
    assert "".join(t["delta"] for t in run.of("text")) == "Running it.The command printed hi. DONE"
    assert run.outcome.report == "The command printed hi. DONE"
    [usage] = run.of("usage")
    assert usage["model"] == "gemini-2.5-flash"
    # thoughts (5) are billed as output: 17 candidates + 5 (the stats say them only in the total)
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_tokens"]) == (220, 22, 40)
    assert usage["total_tokens"] == 242 and usage.get("reasoning_tokens") == 5
    reqs = main_requests(srv)
    assert len(reqs) == 2
    assert "DEFINITION-PROMPT-MARKER" in reqs[0]["systemInstruction"]["parts"][0]["text"]
    assert reqs[1]["contents"][-1]["parts"][0]["functionResponse"]["name"] == "run_shell_command"


def test_real_gemini_fatal_api_error_fails_fast_with_the_message(tmp_path):
    gemini = agent_cli("gemini")
    script = [{"match": "doomed", "turns": [
        {"http_error": {"status": 400, "message": "scripted fatal: key rejected"}}]}]
    with ScriptedServer(script, protocol="gemini") as srv:
        run = run_gemini(gemini, request(tmp_path, srv, "a doomed task", approval="full"))
    assert run.outcome is not None and run.outcome.status == "failed"
    assert "scripted fatal: key rejected" in (run.outcome.reason or "")
    assert run.exit_code == 400 % 256  # the CLI exits with the HTTP status, mod 256
    assert run.elapsed < 60, run.elapsed  # no retries for a 4xx: start-up time only
    print(f"fatal 400: failed after {run.elapsed:.1f}s")


def test_real_gemini_denied_tool_never_blocks_and_is_a_diagnostic(tmp_path):
    gemini = agent_cli("gemini")
    script = [{"match": "try the shell", "turns": [
        {"tool_calls": [{"name": "run_shell_command", "arguments": {"command": "touch NOPE"}}]},
        {"text": "Could not run it."}]}]
    with ScriptedServer(script, protocol="gemini") as srv:
        req = request(tmp_path, srv, "try the shell please", approval="confirm",
                      tools=("read", "bash"))
        run = run_gemini(gemini, req, timeout=90)
    assert run.outcome is not None and run.outcome.status == "completed", run.stderr
    assert not (Path(req.cwd) / "NOPE").exists()
    [result] = run.of("tool_result")
    assert not result["ok"]
    denied = [d for d in run.of("diagnostic") if d["dimension"] == "approval"]
    assert denied and denied[0]["name"] == "run_shell_command"
    assert "tool_not_registered" in denied[0]["message"]
    # the launch said so up front, too
    assert any(d["name"] == "bash" for d in run.launch.diagnostics)
    tools = main_requests(srv)[0]["tools"][0]["functionDeclarations"]
    assert {t["name"] for t in tools} == {"read_file"}


def test_real_gemini_big_multibyte_task_arrives_whole_over_stdin(tmp_path):
    gemini = agent_cli("gemini")
    task = "BIGTASK " + "数据✓ " * 40000  # ~400 KB: far over the 32 KB argv limit
    with ScriptedServer([{"match": "BIGTASK", "turns": [{"text": "got it"}]}],
                        protocol="gemini") as srv:
        run = run_gemini(gemini, request(tmp_path, srv, task, approval="confirm"))
        sent = main_requests(srv)[0]["contents"][0]["parts"][-1]["text"]
    assert run.outcome is not None and run.outcome.status == "completed", run.stderr
    assert hashlib.sha256(sent.encode()).digest() == hashlib.sha256(task.encode()).digest()
    assert all(len(a) < 1000 for a in run.launch.argv)


def test_real_gemini_mcp_server_and_tool_allowlist_in_full(tmp_path):
    gemini = agent_cli("gemini")
    script = [{"match": "use the echo server", "turns": [
        {"tool_calls": [{"name": "mcp_testsrv_echo", "arguments": {"text": "yo"}}]},
        {"text": "echoed"}]}]
    mcp = McpServer("testsrv", sys.executable, (str(MCP_SERVER),))
    with ScriptedServer(script, protocol="gemini") as srv:
        req = request(tmp_path, srv, "use the echo server", approval="full", tools=("read",),
                      mcp_servers=(mcp,))
        run = run_gemini(gemini, req)
    assert run.outcome is not None and run.outcome.status == "completed", run.stderr
    [result] = run.of("tool_result")
    assert result["ok"] and result["content"] == "echo: yo"
    names = {t["name"] for t in main_requests(srv)[0]["tools"][0]["functionDeclarations"]}
    assert "run_shell_command" not in names and "read_file" in names
    assert {"mcp_testsrv_echo", "mcp_testsrv_add"} <= names


def test_real_gemini_resume_continues_the_session(tmp_path):
    gemini = agent_cli("gemini")
    script = [{"match": "remember the word", "turns": [{"text": "noted: PLUM"}, {"text": "PLUM"}]}]
    with ScriptedServer(script, protocol="gemini") as srv:
        first = run_gemini(gemini, request(tmp_path, srv, "remember the word PLUM"))
        assert first.parser is not None and first.parser.session_id
        again = run_gemini(gemini, request(tmp_path, srv, "which word?",
                                           resume=first.parser.session_id))
        history = main_requests(srv)[-1]["contents"]
    assert again.outcome is not None and again.outcome.status == "completed", again.stderr
    assert again.parser is not None and again.parser.session_id == first.parser.session_id
    texts = [p.get("text", "") for c in history for p in c["parts"]]
    assert "noted: PLUM" in texts and any("which word?" in t for t in texts)


# -- launch shape (no CLI needed) -------------------------------------------------


def test_launch_shape(tmp_path):
    with ScriptedServer([], protocol="gemini") as srv:
        req = request(tmp_path, srv, "task text", approval="workspace", model="m1",
                      resume="s-1", prompt="P", tools=("read", "edit", "bash", "task_stop"))
    req.env["GEMINI_SYSTEM_MD"] = "/etc/evil.md"  # type: ignore[index]
    launch = GeminiBackend().launch(req, ["gemini"])
    assert launch.argv == ["gemini", "--output-format", "stream-json", "--skip-trust",
                           "--approval-mode", "auto_edit", "-p", "", "--model", "m1",
                           "--resume", "s-1"]
    assert launch.stdin == b"task text"
    assert launch.env["GEMINI_CLI_HOME"] == str(req.config_home)
    assert "GEMINI_SYSTEM_MD" not in launch.env and launch.env["GEMINI_API_KEY"] == API_KEY
    settings = json.loads(launch.files[".gemini/settings.json"])
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["tools"]["core"] == ["read_file", "replace"]
    assert launch.files[".gemini/GEMINI.md"] == "P"
    names = {(d["dimension"], d["name"]) for d in launch.diagnostics}
    assert names == {("approval", "bash"), ("tools", "task_stop")}


def test_core_tools_by_mode():
    assert core_tools(("bash", "write"), "yolo", ["s"])[0] == [
        "run_shell_command", "write_file", "mcp_s_*"]
    core, diags = core_tools(("write", "WebFetch", "grep"), "default", ["s"])
    assert core == ["grep_search"]
    assert [d["name"] for d in diags] == ["write", "WebFetch"]


# -- the parser on real captured streams -----------------------------------------


def parse(name: str) -> tuple[GeminiParser, list]:
    parser = GeminiParser()
    records = []
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        records += parser.feed(json.loads(line))
    return parser, records


def test_parser_tool_turn_capture():
    parser, records = parse("tool-turn.jsonl")
    kinds = [t for t, _ in records]
    assert kinds.count("usage") == 1 and kinds[-1] == "usage" and parser.terminal
    assert kinds.index("tool_call") < kinds.index("tool_result")
    call = next(f for t, f in records if t == "tool_call")
    result = next(f for t, f in records if t == "tool_result")
    assert result["call_id"] == call["call_id"] and result["duration_ms"] >= 0
    out = parser.finish(0, "")
    assert (out.status, out.report) == ("completed", "The command printed hi. DONE")


def test_parser_api_error_capture():
    parser, records = parse("api-error.jsonl")
    assert parser.terminal and [t for t, _ in records] == ["usage"]
    out = parser.finish(144, "noise on stderr")
    assert out.status == "failed" and "scripted fatal" in (out.reason or "")


def test_parser_mid_stream_error_capture_keeps_the_partial_text():
    parser, records = parse("mid-stream-error.jsonl")
    out = parser.finish(144, "")
    assert out.status == "failed" and "scripted mid-stream failure" in (out.reason or "")
    assert out.report == "partial answer"


def test_parser_denied_capture():
    parser, records = parse("denied.jsonl")
    assert ("diagnostic", "approval") in [(t, f.get("dimension")) for t, f in records]
    assert parser.finish(0, "").status == "completed"


def test_parser_error_event_then_error_result_uses_the_event_message():
    parser = GeminiParser()
    parser.feed({"type": "error", "severity": "error", "message": "empty response"})
    parser.feed({"type": "result", "status": "error", "stats": {}})
    assert parser.finish(0, "").reason == "empty response"


def test_parser_no_terminal_event_fails_with_stderr_tail():
    parser = GeminiParser()
    parser.feed({"type": "init", "session_id": "s", "model": "auto"})
    parser.feed({"type": "message", "role": "assistant", "content": "half", "delta": True})
    out = parser.finish(1, "line a\n\nInvalid auth method selected.\n")
    assert out.status == "failed" and out.reason is not None
    assert out.reason.endswith("Invalid auth method selected.") and parser.session_id == "s"
    assert GeminiParser().finish(41, "").reason == "gemini exited with code 41 and no result"


def test_parser_ignores_user_echo_and_non_objects():
    parser = GeminiParser()
    assert parser.feed({"type": "message", "role": "user", "content": "the task"}) == []
    assert parser.feed([1, 2])[0][0] == "diagnostic"
    assert parser.feed({"type": "future_event"}) == []


@pytest.mark.parametrize("status,ok", [("success", True), ("error", False)])
def test_parser_tool_result_without_a_known_call(status, ok):
    [(kind, fields)] = GeminiParser().feed({"type": "tool_result", "tool_id": "x", "status": status})
    assert kind == "tool_result" and fields["ok"] is ok and fields["content"] == ""
