"""Agent-CLI backends with stand-in programs (docs/explanation/rules.md#agent-clis; cases C18, C19, C20;
issue 8 items 6-9): a script configured as `backends.<name>.command` prints
the event stream the case needs, and zapcli runs it as the real runner would
run the CLI. Plus: a missing CLI is refused with nothing created, a
user-defined backend, the config key's validation, doctor, the tool enum."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tests.backends import clitest as ct

C18 = r'''
import json, os, sys
if "--version" in sys.argv:
    sys.exit(print("0.0.1 (stand-in)"))
mode = os.path.basename(sys.argv[0]).rsplit("-", 1)[-1]
with open(os.path.join(os.environ["ZAP_T"], "claude-launch"), "w") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "stdin": sys.stdin.read()}))
def say(o): print(json.dumps(o), flush=True)
sid = "11111111-2222-4333-8444-555555555555"
say({"type": "system", "subtype": "init", "session_id": sid, "model": "stand-in", "tools": ["Bash"]})
say({"type": "system", "subtype": "task_started", "task_id": "bg7", "description": "full test suite",
     "task_type": "local_bash", "session_id": sid})
if mode == "ceiling":
    print("Background tasks still running after 600s; terminating.", file=sys.stderr, flush=True)
text = "The suite is running in the background; I will be told when it finishes."
say({"type": "assistant", "session_id": sid, "parent_tool_use_id": None,
     "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                 "usage": {"input_tokens": 900, "output_tokens": 30}}})
if mode == "done":
    say({"type": "system", "subtype": "task_notification", "task_id": "bg7", "status": "completed",
         "summary": "412 passed", "session_id": sid})
say({"type": "result", "subtype": "success", "is_error": False, "session_id": sid, "num_turns": 1,
     "duration_ms": 1200, "result": text, "total_cost_usd": 0.004,
     "usage": {"input_tokens": 900, "output_tokens": 30}})
'''

C19 = r'''
import hashlib, json, os, sys
for i in range(3000):  # more than a pipe holds, before reading anything
    print(json.dumps({"type": "item.updated", "item": {"id": "warm", "type": "reasoning",
                      "text": "warming up %04d %s" % (i, "." * 60)}}), flush=True)
data = b"" if os.environ.get("NEVER_READ") else sys.stdin.buffer.read()
print(json.dumps({"type": "thread.started", "thread_id": "t-stdin"}), flush=True)
print(json.dumps({"type": "item.completed", "item": {"id": "m", "type": "agent_message",
      "text": "got %d bytes sha256 %s" % (len(data), hashlib.sha256(data).hexdigest())}}), flush=True)
print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0,
      "output_tokens": 1}}), flush=True)
'''

C20 = r'''
import json, os, sys, time
out = sys.stdout.buffer
def line(b): out.write(b + b"\n"); out.flush()
sid = "s-odd"
out.write(b"Welcome banner that is not JSON\r\n"); out.flush()
line(json.dumps({"type": "system", "subtype": "init", "session_id": sid, "model": "stand-in"}).encode())
huge = "z" * (5 * 1024 * 1024)
line(json.dumps({"type": "user", "session_id": sid, "message": {"role": "user", "content": [
     {"type": "tool_result", "tool_use_id": "t1", "content": huge}]}}).encode())
msg = json.dumps({"type": "assistant", "session_id": sid, "message": {"role": "assistant", "content": [
     {"type": "text", "text": "数据" * 5000 + " END-OF-TEXT"}]}}, ensure_ascii=False).encode()
cut = msg.index("数".encode()) + 1
out.write(msg[:cut]); out.flush(); time.sleep(0.3); out.write(msg[cut:] + b"\r\n"); out.flush()
out.write(b'{"type":"assistant","broken": "line one\nline two"}\n'); out.flush()
out.write(b'{"type":"system","subtype":"status","bad":"\xff\xfe"}\n'); out.flush()
for i in range(20000):
    line(json.dumps({"type": "system", "subtype": "status", "n": i}).encode())
line(json.dumps({"type": "result", "subtype": "success", "is_error": False, "session_id": sid,
                 "result": "TAIL-REPORT", "usage": {"input_tokens": 7, "output_tokens": 3}}).encode())
'''

LINGER = r'''
import json, subprocess, sys, time
sys.stdin.read()
sleeper = subprocess.Popen(["sleep", sys.argv[0].rsplit("-", 1)[-1]], start_new_session=True)
print(json.dumps({"type": "thread.started", "thread_id": "t-linger"}), flush=True)
print(json.dumps({"type": "item.completed", "item": {"id": "m", "type": "agent_message",
      "text": "left a sleeper behind"}}), flush=True)
print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}),
      flush=True)
time.sleep(60)  # does not exit after its terminal event
'''

SILENT_DEATH = r'''
import sys
sys.stdin.read()
print("fatal: the stand-in could not reach its model", file=sys.stderr, flush=True)
sys.exit(3)
'''


def standin(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return path


def use(zap, backends: dict[str, dict]) -> None:
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    import yaml

    (folder / "config.yaml").write_text(yaml.safe_dump({"backends": backends}), encoding="utf-8")


def run(zap, cli: str, task: str, *extra: str, env: dict | None = None, timeout: int = 60):
    proc = zap("spawn", "--cli", cli, *extra, "--", task, env=env)
    assert proc.returncode == 0, proc.err
    sid = proc.out.strip()
    zap("wait", sid, "--timeout", str(timeout))
    return sid, zap.json("poll", "--no-wait", sid)["subagents"][0]


@pytest.mark.parametrize("mode,status", [("pending", "failed"), ("ceiling", "failed"),
                                         ("done", "completed")])
def test_c18_background_work_left_running_is_not_completed(zap, tmp_path, mode, status):
    script = standin(tmp_path, f"fake-claude-{mode}", C18)
    use(zap, {"claude": {"command": str(script)}})
    # the stand-in runs in zapcli's sandbox: it may write its launch only in the workspace
    sid, view = run(zap, "claude", "run the full test suite", "--approval", "full",
                    env={"ZAP_T": str(zap.cwd)})
    assert view["status"] == status, view
    if mode == "pending":
        assert "1 background task still open (bg7: full test suite)" in view["reason"]
    if mode == "ceiling":
        assert "background wait ceiling" in view["reason"]
    assert "in the background" in view["report"]  # the report and usage are kept
    assert ct.usage_rows(zap, sid)[0]["input_tokens"] == 900 == view["input_tokens"]
    launch = json.loads((zap.cwd / "claude-launch").read_text())
    assert launch["env"]["CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS"] == "0"
    assert launch["stdin"] == "run the full test suite"
    assert "--output-format" in launch["argv"] and "--verbose" in launch["argv"]
    assert not any("run the full test suite" in a for a in launch["argv"])


@pytest.mark.parametrize("never_read", [False, True])
def test_c19_task_on_stdin_no_deadlock_pipe_closed(zap, tmp_path, never_read):
    use(zap, {"codex": {"command": str(standin(tmp_path, "fake-codex", C19))}})
    task = ("数据✓ " * 40000).encode()
    env = {"NEVER_READ": "1"} if never_read else {}
    proc = zap("spawn", "--cli", "codex", "-", input=task, env=env)
    assert proc.returncode == 0, proc.err
    sid = proc.out.strip()
    assert zap("wait", sid, "--timeout", "30").returncode == 0, ct.dump(zap, sid)
    poll = zap("poll", sid, "--no-wait").out
    if never_read:
        assert "got 0 bytes" in poll
    else:
        assert f"got {len(task)} bytes sha256 {hashlib.sha256(task).hexdigest()}" in poll


def test_c20_giant_split_broken_lines_and_a_burst_at_exit(zap, tmp_path):
    use(zap, {"claude": {"command": str(standin(tmp_path, "fake-claude-odd", C20))}})
    sid, view = run(zap, "claude", "produce odd output", "--approval", "full")
    assert view["status"] == "completed", ct.dump(zap, sid)
    assert view["report"] == "TAIL-REPORT" and (view["input_tokens"], view["output_tokens"]) == (7, 3)
    assert "TAIL-REPORT" in zap("poll", sid, "--no-wait").out
    raw = zap.trail(sid).read_bytes().split(b"\n")
    assert all(json.loads(line) for line in raw if line)  # every line parses
    assert max(len(line) for line in raw) <= 65536
    replay = ct.replay_text(zap, sid)
    assert "END-OF-TEXT" in replay and "\ufffd" not in replay
    bad = [d for d in ct.records(zap, sid, "diagnostic") if d["name"] == "not_json"]
    assert len(bad) == 3  # the banner and the two halves of the broken line
    assert "Welcome banner" in bad[0]["message"]
    result = ct.records(zap, sid, "tool_result")[0]
    assert "bytes folded" in result["content"] and len(result["content"]) < 20000


def test_terminal_event_then_grace_then_the_tree_and_leftovers_are_ended(zap, tmp_path):
    from tests.conftest import pgrep, sleep_marker

    marker = sleep_marker(3202)
    script = standin(tmp_path, f"fake-codex-{marker}", LINGER)
    use(zap, {"codex": {"command": str(script)}})
    sid, view = run(zap, "codex", "linger", env={"ZAPCLI_BACKEND_EXIT_GRACE_S": "1"})
    assert view["status"] == "completed" and view["report"] == "left a sleeper behind"
    assert view["elapsed_s"] < 15
    assert not pgrep(f"sleep {marker}") and ct.marked(sid) == []


def test_exit_without_a_terminal_event_is_failed_with_stderr(zap, tmp_path):
    use(zap, {"gemini": {"command": str(standin(tmp_path, "fake-gemini", SILENT_DEATH))}})
    sid, view = run(zap, "gemini", "anything")
    assert view["status"] == "failed"
    assert "could not reach its model" in view["reason"], view
    assert "could not reach" in zap("output", sid, "--stderr").out


def test_a_user_defined_backend_speaks_a_known_format(zap, tmp_path):
    script = standin(tmp_path, "mycli-wrapper-done", C18)
    use(zap, {"mycli": {"command": [str(script)], "format": "claude-stream-json"}})
    sid, view = run(zap, "mycli", "wrapped task", env={"ZAP_T": str(zap.cwd)})
    assert view["status"] == "completed" and view["cli"] == "mycli"
    assert "CLI: mycli" in zap("list", "--long").out
    session = ct.records(zap, sid, "session")[0]
    assert session["session_id"] == "11111111-2222-4333-8444-555555555555"
    # it was started with claude's flags (it speaks claude's format)
    assert "stream-json" in json.loads((zap.cwd / "claude-launch").read_text())["argv"]


def test_a_missing_cli_is_refused_with_what_to_install_and_nothing_created(zap, tmp_path):
    env = {"PATH": str(tmp_path)}  # no claude anywhere
    proc = zap("spawn", "--cli", "claude", "hello", env={**env, "PATH": "/nonexistent"})
    assert proc.returncode == 1
    assert "npm install -g @anthropic-ai/claude-code" in proc.err, proc.err
    use(zap, {"codex": {"command": str(tmp_path / "no-such-codex")}})
    proc = zap("spawn", "--cli", "codex", "hello")
    assert proc.returncode == 1 and "backends.codex.command" in proc.err, proc.err
    proc = zap("spawn", "--cli", "nosuchcli", "hello")
    assert proc.returncode == 2 and "claude" in proc.err
    folder = zap.home / "subagents"
    assert not folder.exists() or not list(folder.iterdir())


@pytest.mark.parametrize("backends,message", [
    ({"claude": {"format": "codex-json"}}, "claude speaks claude-stream-json"),
    ({"mycli": {"command": "mycli"}}, "expected one of"),
    ({"Bad Name": {"command": "x", "format": "codex-json"}}, "backend name"),
    ({"sh": {"command": "x", "format": "codex-json"}}, "backend name"),
    ({"mycli": {"command": [], "format": "codex-json"}}, "non-empty list"),
    ({"mycli": {"command": "x", "format": "codex-json", "args": []}}, "keys command and format"),
])
def test_backends_config_is_validated_with_file_and_line(zap, backends, message):
    use(zap, backends)
    proc = zap("spawn", "--cli", "sh", "--", "true")
    assert proc.returncode != 0 and message in proc.err and "config.yaml:" in proc.err, proc.err


def test_a_workspace_config_cannot_name_a_backend_command(zap, tmp_path):
    (zap.cwd / ".zapcli").mkdir()
    (zap.cwd / ".zapcli" / "config.yaml").write_text(
        f"backends:\n  claude:\n    command: {standin(tmp_path, 'evil', SILENT_DEATH)}\n")
    zap("trust", check=True)  # even a trusted folder never chooses the programs that run
    proc = zap("spawn", "--cli", "claude", "hi", env={"PATH": "/nonexistent"})
    assert proc.returncode == 1 and "not installed" in proc.err, proc.err
    assert "`backends` was not applied" in zap("doctor", env={"PATH": "/nonexistent"}).out


def test_doctor_lists_each_backend_with_version_or_what_is_missing(zap, tmp_path):
    script = standin(tmp_path, "fake-claude-v", "print('9.9.9 (Stand-in Code)')\n")
    use(zap, {"claude": {"command": str(script)}})
    doc = zap.json("doctor", env={"PATH": "/usr/bin:/bin"})
    check = next(c for c in doc["checks"] if c["name"] == "backends")
    text = json.dumps(check)
    assert "claude: 9.9.9 (Stand-in Code)" in text, text
    assert "opencode: not installed" in text and "npm install -g opencode-ai" in text


def test_the_subagent_tool_and_tool_schema_offer_every_backend(zap):
    from zapcli.toolapi.schema import subagent_schema

    schema = subagent_schema(run=True)
    assert {"claude", "codex", "gemini", "opencode"} <= set(schema["properties"]["cli"]["enum"])
    assert "opencode" in zap("tool-schema").out


def test_retention_removes_a_cli_subagents_home_with_it(zap, tmp_path):
    use(zap, {"gemini": {"command": str(standin(tmp_path, "fake-gemini", SILENT_DEATH))}})
    sid, _ = run(zap, "gemini", "anything")
    home = ct.home(zap, sid)
    assert home.is_dir()  # kept after the run, for `zapcli continue`
    (Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "config.yaml").write_text("max_kept: 1\n")
    other = zap.spawn_sh("true")
    zap("wait", other, "--timeout", "20")
    assert zap("gc").returncode == 0
    assert not home.exists() and not zap.trail(sid).exists() and zap.trail(other).exists()
