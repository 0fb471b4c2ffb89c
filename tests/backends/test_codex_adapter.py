"""The codex backend against the REAL Codex CLI (0.169) and the scripted
Responses server: the adapter's argv, environment and config home start it,
its `exec --json` output goes through the parser. Plus parser tests on real
captures (fixtures/codex/) and adapter tests on the files it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import agent_cli
from zapcli.backends.clis.base import CliRequest, McpServer, Record
from zapcli.backends.clis.codex import CodexBackend
from zapcli.backends.clis.codex_events import CodexParser
from zapcli.testing import ScriptedServer
from zapcli.trail.model import Outcome, Status

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
MCP_SERVER = Path(__file__).parents[1] / "capabilities" / "fixtures" / "mcp_server.py"
KEY = "sk-test-codex-0123456789"


def request(tmp_path: Path, srv: ScriptedServer | None, task: str, **kw: Any) -> CliRequest:
    home = tmp_path / "codex-home"
    home.mkdir(mode=0o700, exist_ok=True)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "LANG": "C.UTF-8",
           "OPENAI_API_KEY": KEY}
    if srv is not None:
        env["OPENAI_BASE_URL"] = srv.base_url
    kw.setdefault("model", "gpt-5.5")
    return CliRequest(task=task, cwd=str(work), workspace=str(work), config_home=home,
                      env=env, **kw)


def run_codex(req: CliRequest, timeout: float = 90) -> tuple[list[Record], Outcome,
                                                              CodexParser, float, list[str]]:
    """Start codex as the adapter says, feed its stdout lines to the parser."""
    adapter = CodexBackend()
    launch = adapter.launch(req, [str(agent_cli("codex"))])
    for rel, text in launch.files.items():
        path = req.config_home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o600)
    t0 = time.monotonic()
    proc = subprocess.Popen(launch.argv, cwd=req.cwd, env=launch.env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(launch.stdin, timeout=timeout)  # writes, closes, drains
    elapsed = time.monotonic() - t0
    parser = adapter.parser(req)
    assert isinstance(parser, CodexParser)
    records: list[Record] = []
    lines = [ln for ln in out.decode("utf-8", "replace").splitlines() if ln.strip()]
    for line in lines:
        records += parser.feed(json.loads(line))
    outcome = parser.finish(proc.returncode, err.decode("utf-8", "replace")[-2000:])
    return records, outcome, parser, elapsed, launch.argv


def of(records: list[Record], kind: str) -> list[dict[str, Any]]:
    return [f for t, f in records if t == kind]


# --- the real CLI -------------------------------------------------------------------

def test_real_codex_tool_turn_text_calls_usage_report(tmp_path):
    script = [{"match": "run echo", "turns": [
        {"reasoning": "I should run it", "tool_calls": [
            {"name": "exec_command", "arguments": {"cmd": "echo hi-from-shell; env"}, "id": "call_e1"}],
         "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "cached_tokens": 100}},
        {"text": "The command printed hi.",
         "usage": {"prompt_tokens": 1200, "completion_tokens": 10, "cached_tokens": 900}}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        req = request(tmp_path, srv, "please run echo for me",
                      prompt="ZAPDEF: you are the echo reviewer")
        records, outcome, parser, _, argv = run_codex(req)
        bodies = srv.requests
    assert outcome.status == "completed", (outcome, records)
    assert outcome.report == "The command printed hi."
    assert parser.session_id and len(parser.session_id) >= 32
    call, = of(records, "tool_call")
    result, = of(records, "tool_result")
    assert "echo hi-from-shell" in call["arguments"]["command"] and call["name"] == "shell"
    assert result["call_id"] == call["call_id"] and result["ok"] is True
    assert "hi-from-shell" in result["content"]
    assert "OPENAI_BASE_URL=" in result["content"] and KEY not in result["content"]
    assert not list(req.config_home.rglob("shell_snapshots/*"))  # they hold the environment
    assert of(records, "thinking") == [{"delta": "I should run it"}]
    assert of(records, "text") == [{"delta": "The command printed hi."}]
    usage, = of(records, "usage")  # once, the sum of both model calls
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_tokens"]) == (2200, 30, 1000)
    # what codex sent: the definition prompt as a developer message, the call's output
    assert len(bodies) == 2
    assert "ZAPDEF: you are the echo reviewer" in json.dumps(bodies[0]["input"])
    outputs = [i for i in bodies[1]["input"] if i.get("type") == "function_call_output"]
    assert outputs[0]["call_id"] == "call_e1" and "hi-from-shell" in outputs[0]["output"]
    # the key stays out of the config file and argv, the task out of argv
    assert KEY not in (req.config_home / "config.toml").read_text()
    assert not any("run echo" in a or KEY in a for a in argv)


def test_real_codex_http_400_fails_fast_with_the_message(tmp_path):
    script = [{"turns": [{"http_error": {"status": 400, "times": 100,
                                         "message": "scripted bad request"}}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        records, outcome, parser, elapsed, _ = run_codex(request(tmp_path, srv, "fail now"))
    assert outcome.status == "failed" and outcome.reason == "scripted bad request"
    assert parser.terminal and elapsed < 30  # measured ~0.5 s: a 400 is not retried
    assert of(records, "usage") == [] and outcome.report is None


def test_real_codex_unreachable_endpoint_fails_instead_of_waiting_forever(tmp_path):
    with ScriptedServer([], protocol="responses") as srv:
        req = request(tmp_path, srv, "anyone there?")
    # the server is stopped: its port now refuses connections
    records, outcome, _, elapsed, _ = run_codex(req, timeout=120)
    assert outcome.status == "failed" and "Connection failed" in (outcome.reason or "")
    assert elapsed < 90  # measured ~25 s; unbounded retries would never end


def test_real_codex_stream_cut_every_time_fails_once_without_doubled_text(tmp_path):
    from zapcli.testing.responses import _events, _sse

    cut = [_sse(e) for e in _events({"text": "partial answer", "_id": "p"}, {})
           if e["type"] != "response.completed"]
    script = [{"loop": True, "turns": [{"raw": cut, "close": "abort"}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        records, outcome, _, elapsed, _ = run_codex(request(tmp_path, srv, "cut me off"))
        attempts = len(srv.requests)
    assert outcome.status == "failed" and "stream disconnected" in (outcome.reason or "")
    assert attempts == 6 and elapsed < 60  # 1 + 5 retries; measured ~7 s
    assert of(records, "text") == [{"delta": "partial answer"}]
    assert outcome.report == "partial answer"
    assert len(of(records, "diagnostic")) == 6  # "Reconnecting... n/5" and the last error


def test_real_codex_reads_a_400kb_multibyte_task_from_stdin_intact(tmp_path):
    task = "数据✓ " * 40000  # 400,000 bytes of UTF-8
    with ScriptedServer([{"turns": [{"text": "got it"}]}], protocol="responses") as srv:
        req = request(tmp_path, srv, task)
        _, outcome, _, _, argv = run_codex(req)
        body = srv.requests[0]
    assert outcome.status == "completed" and outcome.report == "got it"
    users = [i for i in body["input"] if i.get("role") == "user"]
    assert users[-1]["content"][0]["text"] == task
    assert sum(len(a.encode()) for a in argv) < 32 * 1024 and argv[-1] == "-"


def test_real_codex_resume_counts_only_the_new_tokens(tmp_path):
    script = [{"match": "remember 42", "turns": [
        {"text": "first", "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"text": "second", "usage": {"prompt_tokens": 200, "completion_tokens": 20}}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        rec1, out1, p1, _, _ = run_codex(request(tmp_path, srv, "remember 42"))
        u1, = of(rec1, "usage")
        req2 = request(tmp_path, srv, "what was it?", resume=p1.session_id,
                       resume_usage={k: u1[k] for k in ("input_tokens", "output_tokens",
                                                        "cached_tokens")})
        rec2, out2, p2, _, argv = run_codex(req2)
    assert (out1.report, out2.report) == ("first", "second")
    assert p2.session_id == p1.session_id and argv[-2:] == [p1.session_id, "-"]
    u2, = of(rec2, "usage")  # codex reports 300/30, the thread's total
    assert (u2["input_tokens"], u2["output_tokens"]) == (200, 20)


def test_real_codex_mcp_server_allowed_tool_runs_other_denied(tmp_path):
    script = [{"match": "use mcp", "turns": [
        {"tool_calls": [{"name": "echo", "namespace": "mcp__testsrv",
                         "arguments": {"text": "hi there"}, "id": "c1"},
                        {"name": "add", "namespace": "mcp__testsrv",
                         "arguments": {"a": 1, "b": 2}, "id": "c2"}]},
        {"text": "mcp done"}]}]
    srv_def = McpServer("testsrv", sys.executable, (str(MCP_SERVER),),
                        allow=("echo",))
    with ScriptedServer(script, protocol="responses") as srv:
        records, outcome, _, _, _ = run_codex(request(tmp_path, srv, "use mcp",
                                                      mcp_servers=(srv_def,)))
    assert outcome.status == "completed", outcome
    calls = {c["call_id"]: c["name"] for c in of(records, "tool_call")}
    results = {calls[r["call_id"]]: r for r in of(records, "tool_result")}
    assert results["mcp__testsrv__echo"]["ok"] and "echo: hi there" in \
        results["mcp__testsrv__echo"]["content"]
    assert not results["mcp__testsrv__add"]["ok"]
    assert any(d["dimension"] == "approval" for d in of(records, "diagnostic"))


# --- the parser on real captures ----------------------------------------------------

def parse(name: str, **kw: Any) -> tuple[list[Record], CodexParser]:
    p = CodexParser(model="gpt-5.5", **kw)
    records: list[Record] = []
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        records += p.feed(json.loads(line))
    return records, p.finish(0, ""), p


def test_capture_tool_turn():
    records, outcome, p = parse("tool_echo.jsonl")
    assert [t for t, _ in records] == ["thinking", "tool_call", "tool_result", "text", "usage"]
    assert p.terminal and p.session_id == "01a23039-03b0-76a1-95f1-372058213fe7"
    assert outcome == Outcome(Status.COMPLETED, report="The command printed hi.")


def test_capture_retried_stream_keeps_one_text_and_fails():
    records, outcome, _ = parse("stream_cut_retried.jsonl")  # agent_message emitted 6 times
    assert of(records, "text") == [{"delta": "partial answer"}]
    assert outcome.status == "failed" and outcome.reason.startswith("stream disconnected")


@pytest.mark.parametrize("name, reason", [
    ("http_400.jsonl", "scripted bad request"),
    ("http_500.jsonl", "We’re currently experiencing high demand, which may cause temporary errors."),
    ("response_failed.jsonl", "stream disconnected before completion: scripted failure inside 200")])
def test_capture_failures(name, reason):
    records, outcome, _ = parse(name)
    assert outcome.status == "failed" and outcome.reason == reason
    assert of(records, "usage") == [] and of(records, "text") == []


def test_capture_command_left_running_is_not_completed():
    records, outcome, _ = parse("left_running.jsonl")
    call, = of(records, "tool_call")
    result, = of(records, "tool_result")
    assert result["call_id"] == call["call_id"] and result["ok"] is False
    assert outcome.status == "failed" and "sleep 123.5" in outcome.reason
    assert outcome.report == "left it running"


def test_capture_file_change_and_mcp():
    records, _, _ = parse("file_change.jsonl")
    call, = of(records, "tool_call")
    assert call["name"] == "apply_patch" and call["arguments"]["changes"][0]["kind"] == "add"
    records, _, _ = parse("mcp_denied.jsonl")
    assert of(records, "tool_result")[0]["ok"] is False
    assert of(records, "diagnostic")[0]["name"] == "mcp__testsrv__add"


def test_capture_resume_usage_is_the_increase():
    assert of(parse("resume_second.jsonl")[0], "usage") == [
        {"model": "gpt-5.5", "input_tokens": 300, "output_tokens": 30, "cached_tokens": 190}]
    records, _, _ = parse("resume_second.jsonl",
                          already={"input_tokens": 100, "output_tokens": 10, "cached_tokens": 40})
    assert of(records, "usage") == [
        {"model": "gpt-5.5", "input_tokens": 200, "output_tokens": 20, "cached_tokens": 150}]


def test_unknown_model_warning_is_a_diagnostic_not_a_failure():
    records, outcome, _ = parse("unknown_model.jsonl")
    assert "Model metadata" in of(records, "diagnostic")[0]["message"]
    assert outcome.status == "completed"


def test_exit_without_a_terminal_event_fails_with_stderr():
    p = CodexParser()
    p.feed({"type": "thread.started", "thread_id": "t"})
    p.feed({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message",
                                               "text": "half"}})
    out = p.finish(1, "boom: something broke\n")
    assert out.status == "failed" and "boom: something broke" in out.reason
    assert out.report == "half"


# --- the adapter's files -------------------------------------------------------------

def config_of(tmp_path: Path, **kw: Any) -> tuple[dict[str, Any], Any]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    req = request(tmp_path, None, "t", **kw)
    launch = CodexBackend().launch(req, ["codex"])
    return tomllib.loads(launch.files["config.toml"]), launch


@pytest.mark.parametrize("approval, unattended, mode", [
    ("full", False, "danger-full-access"), ("workspace", False, "workspace-write"),
    ("auto-edit", False, "workspace-write"), ("confirm", False, "read-only"),
    ("workspace", True, "read-only")])
def test_approval_modes_map_to_the_sandbox(tmp_path, approval, unattended, mode):
    cfg, launch = config_of(tmp_path, approval=approval, unattended=unattended)
    assert cfg["sandbox_mode"] == mode and cfg["approval_policy"] == "never"
    assert cfg["model_provider"] == "zapcli" and cfg["features"]["plugins"] is False
    prov = cfg["model_providers"]["zapcli"]
    assert prov["wire_api"] == "responses" and prov["env_key"] == "OPENAI_API_KEY"
    assert launch.argv[:4] == ["codex", "exec", "--json", "--skip-git-repo-check"]
    assert launch.env["CODEX_HOME"] == str(tmp_path / "codex-home")


def test_declared_tools_restrict_and_name_the_rest(tmp_path):
    cfg, launch = config_of(tmp_path, tools=("read", "grep"))
    assert cfg["features"]["shell_tool"] is False and cfg["web_search"] == "disabled"
    assert cfg["sandbox_mode"] == "read-only"
    names = {d["name"] for d in launch.diagnostics}
    assert {"write", "read", "todo", "request_user_input"} <= names
    cfg, _ = config_of(tmp_path, tools=("bash", "write", "edit", "WebSearch"))
    assert "shell_tool" not in cfg["features"] and "web_search" not in cfg
    assert cfg["sandbox_mode"] == "workspace-write"


def test_prompt_schema_resume_and_mcp_secrets(tmp_path):
    prompt = 'Say "hi"\n\tthen \\ stop ✓ \x7f'
    srv = McpServer("db", "/bin/db", ("--x",), env={"DB_TOKEN": "s3cr3t-value", "MODE": "ro"},
                    allow=("query",))
    cfg, launch = config_of(tmp_path, prompt=prompt, output_schema={"type": "object"},
                            resume="0199-thread", mcp_servers=(srv,))
    assert cfg["developer_instructions"] == prompt
    assert launch.argv[:3] == ["codex", "exec", "resume"] and launch.argv[-2:] == ["0199-thread", "-"]
    i = launch.argv.index("--output-schema")
    assert json.loads(launch.files["output-schema.json"]) == {"type": "object"}
    assert launch.argv[i + 1] == str(tmp_path / "codex-home" / "output-schema.json")
    db = cfg["mcp_servers"]["db"]
    assert db["env"] == {"MODE": "ro"} and db["env_vars"] == ["DB_TOKEN"] and db["required"]
    assert db["tools"]["query"]["approval_mode"] == "approve"
    assert "s3cr3t-value" not in launch.files["config.toml"]
    assert "*KEY*" in cfg["shell_environment_policy"]["exclude"]
    assert cfg["features"]["shell_snapshot"] is False
    assert launch.env["DB_TOKEN"] == "s3cr3t-value"
