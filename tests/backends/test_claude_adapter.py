"""The claude adapter: the launch it builds, and the REAL Claude Code CLI
started exactly that way against the scripted Anthropic server, its stdout
fed through the adapter's parser (tests/backends/claude_harness.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.backends.claude_harness import Run, request, run_claude
from tests.conftest import REPO, agent_cli
from zapcli.backends.clis.base import CliRequest, McpServer
from zapcli.backends.clis.claude import ClaudeBackend
from zapcli.testing.server import ScriptedServer

APPROVAL_MCP = REPO / "tests" / "backends" / "fixtures" / "approval_mcp.py"
TEST_MCP = REPO / "tests" / "capabilities" / "fixtures" / "mcp_server.py"


def _req(tmp_path: Path, **kw: Any) -> CliRequest:
    return CliRequest(task=kw.pop("task", "do it"), cwd=str(tmp_path), workspace=str(tmp_path),
                      config_home=tmp_path / "home", env=kw.pop("env", {"PATH": "/bin"}), **kw)


def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


# -- the launch -----------------------------------------------------------------

def test_launch_keeps_the_task_off_argv_and_isolates_the_config_home(tmp_path: Path) -> None:
    task = "数据✓ " * 10000  # over 32 KB
    launch = ClaudeBackend().launch(_req(tmp_path, task=task, model="claude-x",
                                         prompt="Be brief."), ["claude"])
    assert launch.stdin == task.encode()
    assert not any("数据" in a or "Be brief" in a for a in launch.argv)
    assert launch.argv[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert _value(launch.argv, "--setting-sources") == "user"
    assert _value(launch.argv, "--model") == "claude-x"
    assert launch.files["append-system-prompt.md"] == "Be brief."
    assert "--strict-mcp-config" in launch.argv
    env = launch.env
    assert env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "home")
    assert env["CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS"] == "0"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["CLAUDE_CODE_TMPDIR"] == str(tmp_path / "home" / "tmp")


def test_launch_keeps_a_ceiling_the_user_set(tmp_path: Path) -> None:
    env = {"PATH": "/bin", "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "1234", "CLAUDECODE": "1"}
    launch = ClaudeBackend().launch(_req(tmp_path, env=env), ["claude"])
    assert launch.env["CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS"] == "1234"
    assert "CLAUDECODE" not in launch.env


@pytest.mark.parametrize(("approval", "unattended", "hook", "mode", "prompts"), [
    ("full", False, False, "bypassPermissions", None),
    ("workspace", False, False, "acceptEdits", "none"),
    ("auto-edit", True, True, "acceptEdits", "none"),
    ("confirm", False, False, "dontAsk", "none"),
    ("confirm", True, True, "dontAsk", "none"),
    ("confirm", False, True, "default", None),
    ("workspace", False, True, "acceptEdits", None),
])
def test_approval_modes_map_to_permission_flags(tmp_path: Path, approval: str, unattended: bool,
                                                hook: bool, mode: str, prompts: str | None) -> None:
    server = McpServer("zapcli_approval", sys.executable, ("-m", "x")) if hook else None
    argv = ClaudeBackend().launch(_req(tmp_path, approval=approval, unattended=unattended,
                                       approval_server=server), ["claude"]).argv
    assert _value(argv, "--permission-mode") == mode
    assert _value(argv, "--permission-prompts") == prompts
    tool = _value(argv, "--permission-prompt-tool")
    assert tool == ("mcp__zapcli_approval__approve" if hook and not unattended else None)
    if tool:
        assert tool in (_value(argv, "--disallowedTools") or "")


@pytest.mark.parametrize(("approval", "unasked"), [
    ("workspace", "mcp__db__query,mcp__my_srv__list"), ("auto-edit", "mcp__db__query,mcp__my_srv__list"),
    ("confirm", None)])
def test_allowlisted_mcp_tools_run_unasked_where_zapcli_s_decision_says(
        tmp_path: Path, approval: str, unasked: str | None) -> None:
    servers = (McpServer("db", "x", allow=("query",)), McpServer("my.srv", "y", allow=("list",)))
    argv = ClaudeBackend().launch(_req(tmp_path, approval=approval, mcp_servers=servers),
                                  ["claude"]).argv
    assert _value(argv, "--allowedTools") == unasked


def test_tools_map_to_builtins_and_unknown_ones_are_diagnostics(tmp_path: Path) -> None:
    launch = ClaudeBackend().launch(_req(tmp_path, tools=("read", "bash", "edit", "grep",
                                                          "task_output", "teleport")), ["claude"])
    assert _value(launch.argv, "--tools") == "Read,Bash,Edit,NotebookEdit,Grep"
    messages = " ".join(d["message"] for d in launch.diagnostics)
    assert "'teleport' has no Claude Code equivalent" in messages and "task_output" in messages


# -- the real CLI ---------------------------------------------------------------

@pytest.fixture
def claude() -> Path:
    return agent_cli("claude")


def _serve(script: list[dict[str, Any]]) -> ScriptedServer:
    return ScriptedServer(script, protocol="anthropic")


def _calls_results(run: Run) -> list[tuple[str, bool, str]]:
    calls = {c["call_id"]: c["name"] for c in run.of("tool_call")}
    return [(calls[r["call_id"]], r["ok"], r["content"]) for r in run.of("tool_result")]


def test_real_claude_completes_a_tool_using_turn(claude: Path, tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("the secret word is plum\n")
    hook = tmp_path / "work" / ".claude"
    hook.mkdir()  # a project hook in the workspace must not leak in
    (hook / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*",
        "hooks": [{"type": "command", "command": f"touch {tmp_path}/HOOK-RAN"}]}]}}))
    script = [{"match": "find the word", "turns": [
        {"reasoning": "Read it, then echo.", "text": "Reading.", "tool_calls": [
            {"name": "Read", "arguments": {"file_path": str(tmp_path / "work" / "notes.txt")}},
            {"name": "Bash", "arguments": {"command": "echo hi-from-bash", "description": "e"}}],
         "usage": {"prompt_tokens": 1000, "completion_tokens": 40, "cached_tokens": 600}},
        {"text": "The word is plum.", "usage": {"prompt_tokens": 1200, "completion_tokens": 8}}]}]
    with _serve(script) as srv:
        run = run_claude(request(tmp_path, srv, "please find the word " + "x" * 40000,
                                 approval="full"))
        assert srv.side_requests == 0 and len(srv.requests) == 2
    assert run.outcome is not None and run.outcome.status == "completed", (run.stderr, run.lines)
    assert run.outcome.report == "The word is plum."
    assert run.parser.version == "2.1.328" and run.parser.session_id
    assert _calls_results(run)[0][:2] == ("Read", True) and "plum" in _calls_results(run)[0][2]
    assert _calls_results(run)[1] == ("Bash", True, "hi-from-bash")
    assert [r["delta"] for r in run.of("thinking")] == ["Read it, then echo."]
    assert [r["delta"] for r in run.of("text")] == ["Reading.", "The word is plum."]
    (usage,) = run.of("usage")
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_tokens"]) == \
        (2800, 48, 600)
    assert not (tmp_path / "HOOK-RAN").exists()
    assert not any("x" * 100 in a for a in run.launch.argv)


@pytest.mark.parametrize("turn", [
    {"http_error": {"status": 400, "message": "scripted bad request", "times": 20}},
    {"error_200": {"message": "scripted overloaded", "type": "overloaded_error"}},
])
def test_real_claude_api_error_is_failed_with_the_message(claude: Path, tmp_path: Path,
                                                          turn: dict[str, Any]) -> None:
    with _serve([{"match": "err test", "turns": [turn], "loop": True}]) as srv:
        run = run_claude(request(tmp_path, srv, "err test", approval="full",
                                 env={"CLAUDE_CODE_MAX_RETRIES": "0"}))
    result = json.loads([ln for ln in run.lines if b'"type":"result"' in ln][-1])
    assert (run.exit_code, result["subtype"], result["is_error"]) == (1, "success", True)
    assert run.outcome is not None and run.outcome.status == "failed"
    assert "API Error" in (run.outcome.reason or "")
    if "http_error" in turn:
        assert "400 scripted bad request" in (run.outcome.reason or "")


DENY_SCRIPT = [{"match": "perm test", "turns": [
    {"text": "Trying.", "tool_calls": [
        {"name": "Bash", "arguments": {"command": "echo made > bash-made.txt", "description": "w"}},
        {"name": "Write", "arguments": {"file_path": "{work}/written.txt", "content": "x\n"}}]},
    {"text": "Done."}]}]


def test_real_claude_prompt_tool_round_trip(claude: Path, tmp_path: Path) -> None:
    log = tmp_path / "approvals.jsonl"
    server = McpServer("zapcli_approval", sys.executable, (str(APPROVAL_MCP),),
                       {"APPROVAL_LOG": str(log), "APPROVAL_DENY": "Write"})
    with _serve(DENY_SCRIPT) as srv:
        srv.variables["work"] = str(tmp_path / "work")
        run = run_claude(request(tmp_path, srv, "perm test", approval="confirm",
                                 approval_server=server))
    asked = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert [(a["tool_name"], a["tool_use_id"] is not None) for a in asked] == \
        [("Bash", True), ("Write", True)]
    assert asked[0]["input"]["command"] == "echo made > bash-made.txt"
    assert (tmp_path / "work" / "bash-made.txt").read_text() == "made\n"  # allowed: ran
    assert not (tmp_path / "work" / "written.txt").exists()  # denied: did not
    assert _calls_results(run)[1] == ("Write", False, "denied by test: Write")
    assert [d["name"] for d in run.of("diagnostic") if d["dimension"] == "approval"] == ["Write"]
    assert run.outcome is not None and run.outcome.status == "completed"


def test_real_claude_restrictive_mode_denies_at_once_as_diagnostics(claude: Path,
                                                                    tmp_path: Path) -> None:
    with _serve(DENY_SCRIPT) as srv:
        srv.variables["work"] = str(tmp_path / "work")
        run = run_claude(request(tmp_path, srv, "perm test", approval="confirm"), timeout=60)
    assert not list((tmp_path / "work").iterdir())
    assert [r[:2] for r in _calls_results(run)] == [("Bash", False), ("Write", False)]
    diags = [d for d in run.of("diagnostic") if d["dimension"] == "approval"]
    assert [d["name"] for d in diags] == ["Bash", "Write"]
    assert run.outcome is not None and run.outcome.status == "completed"


def test_real_claude_uses_definition_mcp_tools_directly(claude: Path, tmp_path: Path) -> None:
    server = McpServer("testsrv", sys.executable, (str(TEST_MCP),))
    script = [{"match": "mcp test", "turns": [
        {"tool_calls": [{"name": "mcp__testsrv__echo", "arguments": {"text": "ping"}}]},
        {"text": "echoed"}]}]
    with _serve(script) as srv:
        run = run_claude(request(tmp_path, srv, "mcp test", approval="full", mcp_servers=(server,),
                                 tools=("read",)))
        tools = [t["name"] for t in srv.requests[0]["tools"]]
    assert "mcp__testsrv__echo" in tools and "Read" in tools and "Bash" not in tools
    (result,) = _calls_results(run)  # SDK 2.x sends structured content: {"result": ...}
    assert result[:2] == ("mcp__testsrv__echo", True) and "echo: ping" in result[2]


def test_real_claude_resumes_and_returns_structured_output(claude: Path, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
    script = [{"match": "first task", "turns": [
        {"text": "first answer"},
        {"tool_calls": [{"name": "StructuredOutput", "arguments": {"word": "plum"}}]},
        {"text": "structured"}]}]
    with _serve(script) as srv:
        first = run_claude(request(tmp_path, srv, "first task", approval="full"))
        sid = first.parser.session_id
        second = run_claude(request(tmp_path, srv, "go on", approval="full", resume=sid,
                                    output_schema=schema))
    assert first.outcome is not None and first.outcome.report == "first answer"
    assert second.parser.session_id == sid
    assert second.parser.structured_output == {"word": "plum"}
    assert second.outcome is not None and json.loads(second.outcome.report or "") == {"word": "plum"}


def test_real_claude_rejected_key_fails_fast_not_after_minutes_of_retries(
        claude: Path, tmp_path: Path) -> None:
    import time

    script = [{"turns": [{"text": "never"}]}]
    srv = ScriptedServer(script, protocol="anthropic", api_key="the-right-key-123456")
    with srv:
        t0 = time.monotonic()
        run = run_claude(request(tmp_path, srv, "auth test", approval="full"), grace=1)
        took = time.monotonic() - t0
    assert run.parser.terminal and run.outcome is not None and run.outcome.status == "failed"
    assert "rejected the credentials (status 401" in (run.outcome.reason or "")
    assert took < 30  # claude alone would retry for minutes


@pytest.mark.parametrize("turn", [
    {"http_error": {"status": 429, "message": "slow down", "retry_after_ms": 500}},
    {"raw": [{"type": "message_start", "message": {
        "id": "m1", "type": "message", "role": "assistant", "model": "x", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}], "close": "abort"},
])
def test_real_claude_retries_transient_faults_and_says_so(claude: Path, tmp_path: Path,
                                                          turn: dict[str, Any]) -> None:
    with _serve([{"match": "flaky", "turns": [turn, {"text": "recovered"}]}]) as srv:
        run = run_claude(request(tmp_path, srv, "flaky", approval="full"))
        assert len(srv.requests) == 2
    assert run.outcome is not None and run.outcome.report == "recovered"
    assert [d["name"] for d in run.of("diagnostic")] == ["api_retry"]
