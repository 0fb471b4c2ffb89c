"""The opencode adapter and parser (docs/explanation/rules.md#agent-clis), proven against the real opencode
CLI 1.18.33 and the scripted Chat Completions server on 127.0.0.1, plus parser
tests on real captures (tests/backends/fixtures/opencode/).

The launch helper does what the runner will do: writes the adapter's files
(0600) into a fresh config home, starts argv with the adapter's environment,
writes the task to stdin and closes it, collects stdout lines as JSON events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import agent_cli
from zapcli.backends.clis.base import CliLaunch, CliRequest, McpServer
from zapcli.backends.clis.opencode import OpencodeBackend, OpencodeParser
from zapcli.testing.server import ScriptedServer
from zapcli.trail.model import Outcome, Status

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
KEY = "sk-zapcli-test-0123456789"
MCP_FIXTURE = Path(__file__).parents[1] / "capabilities" / "fixtures" / "mcp_server.py"


class Run:
    def __init__(self, launch: CliLaunch, proc: subprocess.CompletedProcess, elapsed: float,
                 records: list[tuple[str, dict[str, Any]]], outcome: Outcome,
                 parser: OpencodeParser):
        self.launch, self.proc, self.elapsed = launch, proc, elapsed
        self.records, self.outcome, self.parser = records, outcome, parser

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for k, f in self.records if k == kind]


def write_files(home: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)


def parse(lines: list[bytes], exit_code: int | None, stderr: str) -> tuple[list, OpencodeParser]:
    parser = OpencodeBackend().parser()
    assert isinstance(parser, OpencodeParser)
    records: list[tuple[str, dict[str, Any]]] = []
    for line in lines:
        if line.strip():
            records += parser.feed(json.loads(line))
    return records, parser.finish(exit_code, stderr), parser


def run_opencode(tmp: Path, srv: ScriptedServer, task: str = "PING say hi", *,
                 home: Path | None = None, env: dict[str, str] | None = None,
                 edit_config: Any = None, **req: Any) -> Run:
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    home = home or tmp / "config-home"
    home.mkdir(mode=0o700, exist_ok=True)
    base_env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"],
                "OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": KEY, **(env or {})}
    request = CliRequest(task=task, cwd=str(ws), workspace=str(ws), config_home=home,
                         env=base_env, model=req.pop("model", "scripted"), **req)
    launch = OpencodeBackend().launch(request, [str(agent_cli("opencode"))])
    if edit_config is not None:
        cfg = json.loads(launch.files["config/opencode/opencode.json"])
        edit_config(cfg)
        launch.files["config/opencode/opencode.json"] = json.dumps(cfg)
    write_files(home, launch.files)
    t0 = time.monotonic()
    proc = subprocess.run(launch.argv, input=launch.stdin, capture_output=True, cwd=ws,
                          env=launch.env, timeout=180)
    elapsed = time.monotonic() - t0
    records, outcome, parser = parse(proc.stdout.splitlines(), proc.returncode,
                                     proc.stderr.decode("utf-8", "replace"))
    print(f"opencode run: exit {proc.returncode} after {elapsed:.1f}s, "
          f"{len(srv.requests)} model requests", file=sys.stderr)
    return Run(launch, proc, elapsed, records, outcome, parser)


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


# -- (a) the real CLI: a tool-using turn under --approval full ----------------------------

def test_real_opencode_runs_a_tool_turn_and_the_parser_pairs_it(tmp_path):
    script = [{"match": "PING", "turns": [
        {"reasoning": "run echo first",
         "tool_calls": [{"id": "call_echo_1", "name": "bash",
                         "arguments": {"command": "echo hi", "description": "say hi"}}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 7, "cached_tokens": 40}},
        {"text": "All done: hi", "usage": {"prompt_tokens": 150, "completion_tokens": 5}}]}]
    with ScriptedServer(script, api_key=KEY) as srv:  # a wrong or missing key gets 401
        run = run_opencode(tmp_path, srv, approval="full", tools=("bash", "read"),
                           prompt="ZAPCLI-DEFINITION-PROMPT: be terse.")
    assert run.outcome == Outcome(Status.COMPLETED, report="All done: hi"), run.proc.stderr
    assert run.proc.returncode == 0
    kinds = [k for k, _ in run.records]
    assert kinds == ["thinking", "tool_call", "tool_result", "usage", "text", "usage"]
    call, result = run.of("tool_call")[0], run.of("tool_result")[0]
    assert call == {"call_id": "call_echo_1", "name": "bash",
                    "arguments": {"command": "echo hi", "description": "say hi"}}
    assert result["call_id"] == "call_echo_1" and result["ok"] is True
    assert result["content"].strip() == "hi"
    # usage once per model call, in zapcli's terms (input includes the cached part)
    assert [(u["input_tokens"], u["output_tokens"], u["cached_tokens"]) for u in run.of("usage")] \
        == [(100, 7, 40), (150, 5, 0)]
    assert all(u["cost"] == 0 for u in run.of("usage"))
    assert run.of("thinking") == [{"delta": "run echo first"}]
    assert run.parser.terminal and run.parser.session_id.startswith("ses_")
    # exactly two model calls (no title call), the tool output went back to the model
    assert len(srv.requests) == 2
    assert srv.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_echo_1",
                                               "content": "hi\n"}
    assert tool_names(srv.requests[0]) == {"bash", "read"}  # the definition's tools only
    system = srv.requests[0]["messages"][0]["content"]
    assert "You are opencode" in system and "ZAPCLI-DEFINITION-PROMPT" in system  # appended
    # the key is never written in clear, the task is not on argv
    assert all(KEY not in text for text in run.launch.files.values())
    assert KEY not in " ".join(run.launch.argv) and "PING" not in " ".join(run.launch.argv)


# -- (b) an API error: failed with the message, at once ---------------------------------

def test_api_error_400_fails_with_the_message_without_retrying(tmp_path):
    script = [{"match": "PING", "turns": [
        {"http_error": {"status": 400, "times": 3, "message": "context too long for scripted"}},
        {"text": "a retry would see this"}]}]
    with ScriptedServer(script) as srv:
        run = run_opencode(tmp_path, srv, approval="full")
    assert run.outcome.status == "failed"
    assert run.outcome.reason == "context too long for scripted"
    assert run.proc.returncode == 1
    assert len(srv.requests) == 1  # a 400 is not retried
    assert run.parser.terminal
    assert run.of("diagnostic")[0]["message"] == "context too long for scripted"


# -- (c) restrictive modes never ask; an ask that slips through is a failure --------------

def test_workspace_mode_denies_bash_up_front_and_the_model_is_told(tmp_path):
    script = [{"match": "PING", "turns": [
        {"tool_calls": [{"id": "call_b", "name": "bash",
                         "arguments": {"command": "echo hi", "description": "x"}}]},
        {"text": "bash was not available"}]}]
    with ScriptedServer(script) as srv:
        run = run_opencode(tmp_path, srv, approval="workspace",
                           tools=("read", "write", "edit", "bash", "grep", "glob"))
    assert [d["name"] for d in run.launch.diagnostics] == ["bash"]
    assert "denied" in run.launch.diagnostics[0]["message"]
    assert "--auto" not in run.launch.argv
    assert "bash" not in tool_names(srv.requests[0])
    assert {"read", "write", "edit", "grep", "glob"} <= tool_names(srv.requests[0])
    result = run.of("tool_result")[0]
    assert result["call_id"] == "call_b" and result["ok"] is False
    assert "unavailable tool" in result["content"]
    assert run.outcome == Outcome(Status.COMPLETED, report="bash was not available")


def test_an_ask_that_reaches_headless_opencode_is_a_diagnostic_and_failed(tmp_path):
    script = [{"match": "PING", "turns": [
        {"text": "Running it.", "tool_calls": [{"id": "call_ask", "name": "bash", "arguments": {
            "command": "echo hi", "description": "x"}}]},
        {"text": "never reached: opencode stops after the rejection"}]}]

    def ask_for_bash(cfg: dict[str, Any]) -> None:
        cfg["permission"]["bash"] = "ask"

    with ScriptedServer(script) as srv:
        run = run_opencode(tmp_path, srv, approval="confirm", tools=("bash",),
                           edit_config=ask_for_bash)
    assert run.proc.returncode == 0  # what opencode itself says: a silent success
    assert len(srv.requests) == 1
    diag = [d for d in run.of("diagnostic") if d["dimension"] == "approval"]
    assert diag and diag[0]["name"] == "bash" and "rejected" in diag[0]["message"]
    assert run.outcome.status == "failed" and run.outcome.report is None
    assert "rejected a permission request" in (run.outcome.reason or "")


# -- isolation, stdin, MCP, resume ------------------------------------------------------

def test_private_config_home_keeps_user_and_project_config_out(tmp_path, user_home):
    user = user_home.path
    leak = tmp_path / "leak.md"
    leak.write_text("LEAKED-INSTRUCTIONS")
    inst = json.dumps({"instructions": [str(leak)]})
    user_home.write(".opencode/opencode.json", inst)
    user_home.write(".config/opencode/opencode.json", inst)
    user_home.write(".claude/CLAUDE.md", "LEAKED-CLAUDE-MD")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "opencode.json").write_text(inst)
    big = "PING " + "数据✓ " * 40000  # ~400 KB, multibyte: stdin only, never argv
    with ScriptedServer([{"match": "PING", "turns": [{"text": "isolated"}]}]) as srv:
        run = run_opencode(tmp_path, srv, big, approval="full", env={
            "XDG_CONFIG_HOME": str(user / ".config"), "OPENCODE_CONFIG_CONTENT": inst,
            "OPENCODE_PERMISSION": json.dumps({"bash": "ask"})})
    assert run.outcome == Outcome(Status.COMPLETED, report="isolated")
    body = json.dumps(srv.requests[0], ensure_ascii=False)
    assert "LEAKED" not in body
    user_msg = [m for m in srv.requests[0]["messages"] if m["role"] == "user"][0]["content"]
    assert (user_msg if isinstance(user_msg, str) else user_msg[0]["text"]).strip() == big.strip()
    assert all(len(a) < 1000 for a in run.launch.argv)
    assert not any(k.startswith("OPENCODE_CONFIG_CONTENT") or k == "OPENCODE_PERMISSION"
                   for k in run.launch.env)
    assert not (user / ".npm").exists() and not list((user / ".cache").iterdir())


def test_mcp_servers_of_the_definition_are_mounted_under_full(tmp_path):
    server = McpServer("testsrv", sys.executable, (str(MCP_FIXTURE),))
    script = [{"match": "PING", "turns": [
        {"tool_calls": [{"id": "call_m", "name": "testsrv_echo", "arguments": {"text": "zap"}}]},
        {"text": "mcp ok"}]}]
    with ScriptedServer(script) as srv:
        run = run_opencode(tmp_path, srv, approval="full", tools=(), mcp_servers=(server,))
    assert {"testsrv_echo", "testsrv_add"} <= tool_names(srv.requests[0])
    assert "bash" not in tool_names(srv.requests[0])
    assert run.of("tool_result")[0] == {"call_id": "call_m", "ok": True, "content": "echo: zap",
                                        "duration_ms": run.of("tool_result")[0]["duration_ms"]}
    assert run.outcome.report == "mcp ok"


def test_resume_continues_the_same_session_in_the_same_config_home(tmp_path):
    script = [{"match": "PING", "turns": [{"text": "first answer"}, {"text": "second answer"}]}]
    with ScriptedServer(script) as srv:
        first = run_opencode(tmp_path, srv, approval="full")
        sid = first.parser.session_id
        second = run_opencode(tmp_path, srv, "and continue", approval="full", resume=sid)
    assert second.launch.argv[-2:] == ["--session", sid]
    assert second.parser.session_id == sid
    assert second.outcome.report == "second answer"
    history = [m["content"] for m in srv.requests[1]["messages"] if m["role"] != "system"]
    assert [h if isinstance(h, str) else h[0]["text"] for h in history][:2] == \
        ["PING say hi", "first answer"]


# -- (d) the parser on real captures and edge cases -------------------------------------

def fixture(name: str) -> list[bytes]:
    return (FIXTURES / name).read_bytes().splitlines()


def test_parser_on_captured_tool_turn():
    records, outcome, parser = parse(fixture("tool_turn_full.jsonl"), 0, "")
    assert [k for k, _ in records] == ["thinking", "tool_call", "tool_result", "usage", "text",
                                       "usage"]
    assert records[1][1]["call_id"] == records[2][1]["call_id"] == "call_0_1_0"
    assert records[2][1]["duration_ms"] == 168
    assert records[3][1] == {"input_tokens": 100, "output_tokens": 7, "cached_tokens": 40,
                             "cost": 0}
    assert outcome == Outcome(Status.COMPLETED, report="All done: hi")
    assert parser.session_id == "ses_dcfbd34f7ffejpcou23aXo95B7"


def test_parser_on_captured_errors_and_rejections():
    records, outcome, _ = parse(fixture("http_400.jsonl"), 1, "")
    assert outcome.status == "failed" and outcome.reason == "bad thing happened"
    stderr = (FIXTURES / "ask_rejected.stderr").read_text()
    records, outcome, _ = parse(fixture("ask_rejected.jsonl"), 0, stderr)
    assert outcome.status == "failed" and "bash" in (outcome.reason or "")
    assert any(k == "diagnostic" and f["dimension"] == "approval" for k, f in records)
    records, outcome, _ = parse(fixture("bash_denied_workspace.jsonl"), 0, "")
    assert outcome == Outcome(Status.COMPLETED, report="could not run it")
    stderr = (FIXTURES / "session_not_found.stderr").read_text()
    records, outcome, _ = parse([], 1, stderr)
    assert outcome.status == "failed" and outcome.reason.endswith("Error: Session not found")
    assert "\x1b" not in outcome.reason


def test_parser_edge_cases():
    parser = OpencodeParser(model="m1")
    assert parser.feed([1, 2])[0][0] == "diagnostic"
    assert parser.feed({"type": "brand_new", "sessionID": "s"})[0][0] == "diagnostic"
    assert parser.session_id == "s"
    parser.feed({"type": "step_start", "part": {}})
    assert parser.feed({"type": "text", "part": {"text": "partial"}}) == [("text",
                                                                            {"delta": "partial"})]
    usage = parser.feed({"type": "step_finish", "part": {"reason": "tool-calls", "tokens": {
        "input": 10, "output": 2, "reasoning": 3, "cache": {"read": 5, "write": 1}}, "cost": 0.5}})
    # input counts the cache read and write once (16 = 10 + 5 + 1), output the reasoning (5 = 2 + 3);
    # the parts are kept beside them, each counted once by the meter
    assert usage == [("usage", {"input_tokens": 16, "output_tokens": 5, "cached_tokens": 5,
                                "cache_write_tokens": 1, "reasoning_tokens": 3,
                                "model": "m1", "cost": 0.5})]
    assert not parser.terminal
    out = parser.finish(0, "some\nlast line\n")
    assert out.status == "failed" and out.reason.endswith("some\nlast line")
    parser.feed({"type": "step_start", "part": {}})
    parser.feed({"type": "step_finish", "part": {"reason": "stop", "tokens": {}}})
    assert parser.terminal
    assert parser.finish(0, "").status == "failed"  # a final step without text: no answer
    parser.feed({"type": "error", "error": {"name": "UnknownError"}})
    assert parser.finish(1, "").reason == "UnknownError"


def test_full_maps_to_auto_and_never_asks(tmp_path):
    req = CliRequest(task="t", cwd=str(tmp_path), workspace=str(tmp_path), config_home=tmp_path,
                     env={"OPENCODE_CONFIG": "/x", "OPENAI_API_KEY": KEY}, approval="full",
                     model="gpt-x", tools=("read", "task_output"))
    launch = OpencodeBackend().launch(req, ["opencode"])
    cfg = json.loads(launch.files["config/opencode/opencode.json"])
    assert "--auto" in launch.argv and launch.argv[-3:-1] == ["--model", "zapcli/gpt-x"]
    assert "\"ask\"" not in json.dumps(cfg["permission"])
    assert cfg["provider"]["zapcli"]["options"]["baseURL"] == "https://api.openai.com/v1"
    assert launch.stdin == b"t" and "OPENCODE_CONFIG" not in launch.env
    assert [d["name"] for d in launch.diagnostics] == ["task_output"]
    for mode in ("confirm", "workspace", "auto-edit"):
        launch = OpencodeBackend().launch(CliRequest(
            task="t", cwd=".", workspace=".", config_home=tmp_path, env={}, approval=mode,
            model="m", tools=("bash", "edit", "write", "read")), ["opencode"])
        perm = json.loads(launch.files["config/opencode/opencode.json"])["permission"]
        assert "\"ask\"" not in json.dumps(perm) and "--auto" not in launch.argv
        assert perm["bash"] == "deny" and perm["read"] == "allow"
        assert perm["edit"] == ("deny" if mode == "confirm" else "allow")


def test_unattended_keeps_the_mode_and_still_never_asks(tmp_path):
    def perm_of(approval: str) -> tuple[dict[str, Any], list[str]]:
        launch = OpencodeBackend().launch(CliRequest(
            task="t", cwd=".", workspace=".", config_home=tmp_path, env={}, approval=approval,
            unattended=True, model="m", tools=("edit", "bash")), ["opencode"])
        return json.loads(launch.files["config/opencode/opencode.json"])["permission"], launch.argv
    perm, argv = perm_of("full")
    assert perm["edit"] == perm["bash"] == "allow" and "--auto" in argv
    perm, argv = perm_of("workspace")
    assert (perm["edit"], perm["bash"]) == ("allow", "deny") and "--auto" not in argv
