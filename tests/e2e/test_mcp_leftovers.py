"""C17: an MCP stdio server that ignores EOF and SIGTERM, behind a wrapper
(`sh -c`), with a helper of its own, never outlives its subagent — on normal
completion, on kill, and when the runner itself is SIGKILLed (then the
observer that records `lost` ends it from the runner's `helper` records), and
when a run's token budget stops a child whose runner is already dead."""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from tests.conftest import final_status, pgrep, record_of, sleep_marker, supervisor_pid, wait_until
from zapcli.testing import ScriptedServer

STUBBORN = '''
import json, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGHUP, signal.SIG_IGN)
subprocess.Popen(["sleep", sys.argv[1]])
def reply(i, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "result": result}) + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg: continue
    method = msg.get("method")
    if method == "initialize":
        reply(msg["id"], {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                          "serverInfo": {"name": "stubborn", "version": "0"}})
    elif method == "tools/list":
        reply(msg["id"], {"tools": [{"name": "ping", "description": "answers pong",
                                     "inputSchema": {"type": "object", "properties": {}}}]})
    elif method == "tools/call":
        reply(msg["id"], {"content": [{"type": "text", "text": "pong"}]})
    else:
        reply(msg["id"], {})
while True: time.sleep(1)
'''


@pytest.fixture
def pinger(zap, tmp_path):
    marker = sleep_marker(3261)
    script = tmp_path / "stubborn_server.py"
    script.write_text(STUBBORN)
    cfg = zap.cwd / ".zapcli"
    (cfg / "subagents").mkdir(parents=True)
    (cfg / "mcp.json").write_text(json.dumps({"mcpServers": {"stubborn": {
        "command": "sh", "args": ["-c", f"python3 {script} {marker}; :"]}}}))
    (cfg / "subagents" / "pinger.yml").write_text(
        "name: pinger\ndescription: calls ping\ntools: []\nmcp: {servers: [stubborn]}\n")
    zap("trust", check=True)
    srv = ScriptedServer([{"match": "ping-job", "turns": [
        {"tool_calls": [{"name": "mcp_call", "arguments": {"server": "stubborn", "tool": "ping",
                                                             "arguments": {}}}]},
        {"text": "pinged", "hold": "answer"}]}])  # running until the test lets it end
    srv.start()
    zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY="k" * 12)
    zap.env["ZAPCLI_KILL_GRACE_S"] = "1"

    def leftovers():
        return pgrep(str(script)) + pgrep(f"sleep {marker}")

    def spawn(answer: bool = False):
        proc = zap("spawn", "--agent", "pinger", "--approval", "full", "--", "ping-job")
        assert proc.returncode == 0, proc.err
        sid = proc.out.strip()
        wait_until(lambda: pgrep(f"sleep {marker}"), 20)  # the server and its helper run
        if answer:  # then its last answer comes and it completes
            srv.release("answer")
        return sid

    yield spawn, leftovers
    srv.stop()
    for pid in leftovers():
        os.kill(pid, signal.SIGKILL)


def test_after_completion(zap, pinger):
    spawn, leftovers = pinger
    sid = spawn(answer=True)
    assert zap("wait", sid, "--timeout", "30").returncode == 0
    wait_until(lambda: not leftovers(), 5)


def test_after_kill(zap, pinger):
    spawn, leftovers = pinger
    sid = spawn()
    assert zap("kill", sid).returncode == 0
    wait_until(lambda: not leftovers(), 5)


def test_after_the_runner_is_killed(zap, pinger):
    spawn, leftovers = pinger
    sid = spawn()
    assert wait_until(lambda: record_of(zap, sid, "helper"), 5)["name"] == "mcp"
    os.kill(supervisor_pid(zap, sid), signal.SIGKILL)
    wait_until(lambda: zap.status(sid) == "lost", 10, 0.3)
    wait_until(lambda: not leftovers(), 5)
    note = next(r for r in zap.json("replay", sid)["records"] if r.get("name") == "leftovers")
    assert "ended" in note["message"]


def test_after_a_budget_stop_of_a_dead_runner(zap, pinger, monkeypatch):
    """The token budget stops a child as an observer or `kill` would: its
    runner died and nobody observed it yet, so only its `helper` records
    lead to what it left running — which the stop ends too."""
    from zapcli.budget.allot import Budget
    from zapcli.budget.meter import Meter
    from zapcli.budget.tree import TreeBudget
    from zapcli.cli.settings import for_observers

    spawn, leftovers = pinger
    sid = spawn()
    assert wait_until(lambda: record_of(zap, sid, "helper"), 5)["name"] == "mcp"
    runner = psutil.Process(supervisor_pid(zap, sid))
    runner.kill()
    wait_until(lambda: not runner.is_running() or runner.status() == psutil.STATUS_ZOMBIE, 5)
    monkeypatch.setenv("ZAPCLI_KILL_GRACE_S", "1")
    meter = Meter("m", max_tokens=100)
    meter.tokens = 100  # the run's own calls spent it: its tree is stopped
    from zapcli.ops.kill import end_and_stop
    from zapcli.ops.usage import settle

    budget = TreeBudget(zap.env["ZAPCLI_SESSION"], Budget(100), meter, for_observers(), stop=end_and_stop, settle=settle)
    assert budget.enforce() is not None and budget.stopped == [sid]
    assert final_status(zap.trail(sid)) == "failed"
    wait_until(lambda: not leftovers(), 5)
