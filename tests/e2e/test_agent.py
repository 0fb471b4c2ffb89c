"""The built-in agent end to end: real child processes talking real HTTP to the
bundled scripted OpenAI-compatible server (docs/explanation/rules.md#models, docs/explanation/rules.md#tokens, docs/explanation/rules.md#approvals)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.conftest import sleep_marker, wait_until

KEY = "sk-test-secret-abcdef123456"


def _usage(p, c):
    return {"prompt_tokens": p, "completion_tokens": c}




def _spawn(zap, task, *extra):
    proc = zap("spawn", *extra, "--", task)
    assert proc.returncode == 0, proc.err
    return proc.out.strip()


def _records(zap, sid):
    return zap.json("replay", sid)["records"]


def test_tool_round_trip_and_report(zap, model):
    (zap.cwd / "notes.txt").write_text("the secret number is 42\n")
    srv = model([{"match": "find the number", "turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}], "usage": _usage(50, 5)},
        {"text": "The number is 42.", "usage": _usage(80, 6)}]}])
    sid = _spawn(zap, "find the number")
    assert zap("wait", sid).returncode == 0
    recs = _records(zap, sid)
    types = [r["type"] for r in recs]
    assert types.index("tool_call") < types.index("tool_result") < types.index("report")
    result = next(r for r in recs if r["type"] == "tool_result")
    assert result["ok"] and "42" in result["content"]
    assert next(r for r in recs if r["type"] == "report")["text"] == "The number is 42."
    assert zap("output", sid).out.rstrip().endswith("The number is 42.")
    # the tool result went back to the model in the second request
    second = srv.requests[1]["messages"]
    assert any(m["role"] == "tool" and "42" in m["content"] for m in second)


def test_tool_error_goes_back_to_the_model(zap, model):
    srv = model([{"match": "read missing", "turns": [
        {"tool_calls": [{"name": "read", "arguments": {"path": "does-not-exist.txt"}}]},
        {"text": "It does not exist."}]}])
    sid = _spawn(zap, "read missing")
    assert zap("wait", sid).returncode == 0
    result = next(r for r in _records(zap, sid) if r["type"] == "tool_result")
    assert not result["ok"]
    assert any(m["role"] == "tool" and m["content"].startswith("Error") for m in srv.requests[1]["messages"])


def test_429_then_success(zap, model):
    model([{"match": "flaky", "turns": [{"http_error": {"status": 429, "times": 1}}, {"text": "ok after retry"}]}])
    sid = _spawn(zap, "flaky")
    assert zap("wait", sid).returncode == 0
    assert zap.json("poll", sid)["subagents"][0]["report"] == "ok after retry"
    # the retried answer leaves a trace in the trail
    seen = [r for r in _records(zap, sid) if r["type"] == "diagnostic" and r.get("dimension") == "model"]
    assert [r["name"] for r in seen] == ["http_429"] and "asks to wait 10 ms" in seen[0]["message"]
    (parked,) = [r for r in _records(zap, sid) if r["type"] == "rate_limit"]  # parked, not failed
    assert parked["status"] == 429


def test_max_turns_fails_with_reason(zap, model):
    (zap.cwd / ".zapcli" / "subagents").mkdir(parents=True)
    (zap.cwd / ".zapcli" / "subagents" / "looper.yml").write_text(
        "name: looper\ndescription: loops\ntools: [glob]\nmaxTurns: 2\n")
    zap("trust", check=True)
    model([{"match": "loop", "loop": True, "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}]}])
    sid = _spawn(zap, "loop forever", "--agent", "looper")
    assert zap("wait", sid).returncode == 3
    view = zap.json("poll", sid)["subagents"][0]
    assert (view["status"], view["reason"]) == ("failed", "max turns reached (2 model calls)")


def test_no_model_configured_is_refused_at_spawn(zap):
    """#14.2: spawn can tell: one line naming what to set, exit 1, nothing created."""
    proc = zap("spawn", "--", "do something")
    assert proc.returncode == 1 and proc.out == ""
    lines = proc.err.strip().splitlines()
    assert len(lines) == 1 and "no model configured" in lines[0] and "ZAPCLI_MODEL" in lines[0]
    assert not list(zap.home.glob("subagents/*"))
    assert zap.json("list")["count"] == 0


def test_subagent_child_never_gets_the_subagent_tool(zap, model):
    srv = model([{"match": "list tools", "turns": [{"text": "done"}]}])
    sid = _spawn(zap, "list tools")
    assert zap("wait", sid).returncode == 0
    names = [t["function"]["name"] for t in srv.requests[0]["tools"]]
    assert "subagent" not in names and "read" in names


def _spawn_bash_needing_approval(zap, model, marker):
    model([{"match": marker, "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {marker} > out.txt"}}]},
        {"text": "finished"}]}])
    return _spawn(zap, marker)


def _pending(zap, sid):
    def check():
        view = zap.json("poll", "--no-wait", sid)["subagents"][0]
        return view if view["status"] == "awaiting_approval" else None
    return wait_until(check, timeout=20, interval=0.2)


def test_approval_approve_path(zap, model):
    sid = _spawn_bash_needing_approval(zap, model, "approve-me")
    view = _pending(zap, sid)
    assert view["pending_approval"]["tool"] == "bash"
    # poll returns at once: waiting would not bring the decision (it used to wait 5 s + 30 s)
    doc = zap.json("poll", "--wait-secs", "30", sid)
    assert doc["subagents"][0]["status"] == "awaiting_approval" and doc["waited_s"] < 20
    listed = zap("list").out
    assert "awaiting_approval" in listed and "bash" in listed
    assert zap("approve", sid).returncode == 0
    assert zap("wait", sid, "--timeout", "20").returncode == 0
    assert (zap.cwd / "out.txt").read_text().strip() == "approve-me"


def test_approval_deny_path_tells_the_model(zap, model):
    sid = _spawn_bash_needing_approval(zap, model, "deny-me")
    _pending(zap, sid)
    assert zap("deny", sid, "--reason", "not today").returncode == 0
    assert zap("wait", sid, "--timeout", "20").returncode == 0
    result = next(r for r in _records(zap, sid) if r["type"] == "tool_result")
    assert not result["ok"] and "not today" in result["content"]
    assert not (zap.cwd / "out.txt").exists()



def test_racing_approve_and_deny_record_exactly_one_decision(zap, model):
    """Tryout: `approve & deny & wait` both said yes and wrote two decisions."""
    sid = _spawn_bash_needing_approval(zap, model, "race-me")
    _pending(zap, sid)
    # Each decider imports everything first, then all fire at the same instant.
    go = time.time() + 1.5
    code = ("import sys, time; from zapcli.cli.entry import main; import zapcli.ops.steer; "
            f"time.sleep(max(0, {go} - time.time())); raise SystemExit(main(sys.argv[1:]))")
    procs = [subprocess.Popen([sys.executable, "-c", code, verb, "--json", sid], env=zap.env,
                              cwd=zap.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for verb in ("approve", "deny") * 4]
    results = [(p.wait(timeout=30), p.stdout.read()) for p in procs]
    winners = [json.loads(out) for code, out in results if code == 0]
    assert len(winners) == 1, results
    losers = [json.loads(out)["error"] for code, out in results if code != 0]
    assert all("no pending approval" in e["message"] or "nothing to decide" in e["message"]
               for e in losers), losers
    assert zap("wait", sid, "--timeout", "20").returncode == 0
    decisions = [r for r in _records(zap, sid) if r["type"] == "approval_decision"]
    assert len(decisions) == 1
    ran = (zap.cwd / "out.txt").exists()
    assert ran == (decisions[0]["decision"] == "approve") == (winners[0]["decision"] == "approve")

def test_a_deadline_reached_while_awaiting_approval_says_so(zap, model):
    """A new user's `spawn --agent fixer; wait` (README) sat 5 minutes on an
    approval nobody gave, then ended "timeout (deadline reached)": the end
    now names the unanswered request and how to answer one."""
    model([{"match": "nobody-answers", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo x > out.txt"}}]},
        {"text": "finished"}]}])
    sid = _spawn(zap, "nobody-answers", "--timeout", "3")
    assert zap("wait", sid, "--timeout", "30").returncode == 3
    view = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert view["status"] == "timeout", view
    assert "awaiting approval r1" in view["reason"] and "zapcli approve" in view["reason"], view
    assert not (zap.cwd / "out.txt").exists()


def test_unattended_denies_at_once(zap, model):
    model([{"match": "unattended", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo x > out.txt"}}]}, {"text": "ok"}]}])
    sid = _spawn(zap, "unattended job", "--unattended")
    assert zap("wait", sid, "--timeout", "20").returncode == 0
    assert not (zap.cwd / "out.txt").exists()
    decision = next(r for r in _records(zap, sid) if r["type"] == "approval_decision")
    assert decision["decision"] == "deny"


def test_kill_while_awaiting_approval_settles_it_denied(zap, model):
    sid = _spawn_bash_needing_approval(zap, model, "kill-me")
    _pending(zap, sid)
    assert zap("kill", sid, "--grace", "1").returncode == 0
    recs = _records(zap, sid)
    assert any(r["type"] == "approval_decision" and r["decision"] == "deny" for r in recs)
    assert zap.status(sid) == "cancelled"
    assert not (zap.cwd / "out.txt").exists()


def test_steering_is_delivered_before_the_next_model_call(zap, model):
    srv = model([{"match": "steer me", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 2"}}], "delay_s": 0},
        {"text": "done"}]}])
    sid = _spawn(zap, "steer me", "--approval", "full")
    wait_until(lambda: any(r["type"] == "tool_call" for r in _records(zap, sid)), timeout=20)
    assert zap("send", sid, "also check the docs").returncode == 0
    assert zap("wait", sid, "--timeout", "30").returncode == 0
    assert any(m["role"] == "user" and m["content"] == "also check the docs" for m in srv.requests[1]["messages"])
    steers = [r for r in _records(zap, sid) if r["type"] == "steer"]
    sent = next(r for r in steers if not r["delivered"])
    assert any(r["delivered"] and r["steer_id"] == sent["steer_id"] for r in steers)
    after = zap("send", sid, "too late")
    assert after.returncode == 1 and "not delivered" in after.err


def test_token_budget_stops_the_loop(zap, model):
    model([{"match": "budget", "loop": True, "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}], "usage": _usage(600, 10)}]}])
    sid = _spawn(zap, "budget run", "--max-tokens", "4000")
    assert zap("wait", sid, "--timeout", "30").returncode == 3
    view = zap.json("poll", sid)["subagents"][0]
    used = view["input_tokens"] + view["output_tokens"]
    # it stops before the call (predicted from the last one) that would pass 4,000
    assert view["status"] == "failed" and view["reason"].startswith(
        f"token budget: {used:,} of its 4,000 tokens used, and the next model call (about "), view
    assert 4000 - 2 * 610 < used <= 4000


def test_tokens_settle_into_the_parent_exactly_once(zap, model):
    model([{"match": "count tokens", "turns": [{"text": "done", "usage": _usage(123, 7)}]}])
    sid = _spawn(zap, "count tokens")
    zap("wait", sid, check=True)
    for _ in range(3):  # poll, wait and usage all collect it; it settles once
        zap("poll", sid, check=True)
        zap("wait", sid, check=True)
    doc = zap.json("usage")
    (session,) = doc["sessions"]
    assert session["total"]["input_tokens"] == 123 and session["total"]["output_tokens"] == 7
    assert [s["id"] for s in session["subagents"]] == [sid]
    text = zap("usage").out  # a shell parent: its own share is said in words, not "0 in / 0 out"
    assert "123 in, 7 out" in text and "— all by its subagents" in text, text


@pytest.mark.timeout(60)
def test_usage_of_a_session_of_shell_subagents_says_no_model_calls(zap):
    """#14.6: not "its own calls 0 in / 0 out, its subagents 0 in / 0 out"."""
    sid = zap.spawn_sh("echo no model here")
    zap("wait", sid, check=True)
    text = zap("usage", check=True).out
    assert "no model calls" in text and "0 in" not in text, text


def test_api_key_is_in_no_trail_output_or_ps_line(zap, model):
    model([{"match": "leak", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "env; echo key=$OPENAI_API_KEY"}}]},
        {"text": f"the key might be {KEY}"}]}])
    sid = _spawn(zap, "leak the key", "--approval", "full")
    seen_in_ps = []

    def scan():
        for p in psutil.process_iter(["cmdline"]):
            try:
                if KEY in " ".join(p.info["cmdline"] or []):
                    seen_in_ps.append(p.pid)
            except psutil.Error:
                pass
        return zap.status(sid) not in ("running", "queued")
    wait_until(scan, timeout=30, interval=0.1)
    assert not seen_in_ps
    for path in zap.home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_parent_run_spawns_subagents_and_collects_them(zap, model):
    srv = model([
        {"match": "parent job", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "child one"}},
                            {"name": "subagent", "arguments": {"action": "spawn", "task": "child two"}}],
             "usage": _usage(100, 10)},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}],
             "usage": _usage(100, 10)},
            {"text": "all children done", "usage": _usage(100, 10)}]},
        {"match": "child one", "turns": [{"text": "one done", "usage": _usage(10, 1)}]},
        {"match": "child two", "turns": [{"text": "two done", "usage": _usage(10, 1)}]}])
    proc = subprocess.run([sys.executable, "-m", "zapcli", "run", "parent job"], env=zap.env, cwd=zap.cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "all children done" in proc.stdout
    # arguments shown as JSON; when calls ran together each result says whose it is
    lines = proc.stderr.splitlines()
    assert '· subagent {"action": "spawn", "task": "child one"}' in lines
    calls = [i for i, line in enumerate(lines) if line.startswith("· subagent")]
    first_result = next(i for i, line in enumerate(lines) if line.startswith("  │"))
    if first_result > calls[1]:  # both calls were announced before the results came:
        # each says whose it is, the one whose call came last too (the stream showed it unlabelled)
        assert sum(line.startswith("  ↳ subagent {") for line in lines[calls[1]:]) == 2, lines
    parent_tools = [t["function"]["name"] for t in srv.requests[0]["tools"]]
    assert "subagent" in parent_tools
    third = srv.requests[-1]["messages"]
    waited = [m for m in third if m["role"] == "tool" and "one done" in m["content"]]
    assert waited, "the wait result carried the children's output"
    usage = json.loads(subprocess.run([sys.executable, "-m", "zapcli", "usage", "--all", "--json"],
                                      env=zap.env, capture_output=True, text=True).stdout)
    run = next(s for s in usage["sessions"] if s["session"].startswith("run_"))
    assert run["own"]["input_tokens"] == 300 and len(run["subagents"]) == 2
    assert run["total"]["input_tokens"] == 320


def test_deadline_holds_while_the_model_call_hangs(zap, model):
    model([{"match": "hang", "turns": [{"text": "late", "delay_s": 40}]}])
    sid = _spawn(zap, "hang please", "--timeout", "2")
    # nobody polls until the end: the child enforces its own deadline
    from tests.conftest import final_status

    wait_until(lambda: final_status(zap.trail(sid)), timeout=20, interval=0.2)
    assert final_status(zap.trail(sid)) == "timeout"
    pid = _records(zap, sid)[1]["pid"]
    wait_until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, 10)


def test_kill_during_a_model_call_ends_within_the_grace(zap, model):
    model([{"match": "slow model", "turns": [{"text": "late", "delay_s": 40}]}])
    sid = _spawn(zap, "slow model")
    wait_until(lambda: any(r["type"] == "start" for r in _records(zap, sid)), timeout=20)
    res = zap.json("kill", sid, "--grace", "5")
    assert res["subagents"][0]["outcome"] == "cancelled"
    assert res["subagents"][0]["signals"] == "SIGTERM"  # it exited on TERM, no SIGKILL needed
    assert zap.status(sid) == "cancelled"


def test_run_subagent_by_hand_never_runs_a_task_twice(zap):
    sid = zap.spawn_sh("echo ran >> runs.txt; sleep 3")
    wait_until(lambda: (zap.cwd / "runs.txt").exists(), 10)
    proc = zap("run", "--subagent", "--id", sid, timeout=30)
    assert proc.returncode == 2 and "already running" in proc.err
    assert zap("wait", sid).returncode == 0
    assert (zap.cwd / "runs.txt").read_text() == "ran\n"
    again = zap("run", "--subagent", "--id", sid)
    assert again.returncode == 2 and "already ended" in again.err


def _run(zap, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "zapcli", "run", *args], env=zap.env, cwd=zap.cwd,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_subagent_tool_sh_spawn_needs_the_same_approval_as_bash(zap, model, tmp_path):
    target = tmp_path / "outside.txt"
    model([{"match": "sh spawn", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {
            "action": "spawn", "cli": "sh", "task": f"echo PWNED > {target}"}}]},
        {"text": "tried"}]}])
    proc = _run(zap, "--approval", "confirm", "--unattended", "sh spawn")
    assert proc.returncode == 0, proc.stderr
    assert not target.exists()
    assert "not approved" in proc.stderr and "unattended" in proc.stderr


def test_children_inherit_the_parents_approval_mode(zap, model):
    model([{"match": "inherit", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "child inherits"}}]},
        {"text": "spawned"}]},
        {"match": "child inherits", "turns": [{"text": "ok"}]}])
    proc = _run(zap, "--approval", "confirm", "--unattended", "inherit")
    assert proc.returncode == 0, proc.stderr
    docs = zap.json("list", "--all")["subagents"]
    child = docs[0]["id"]
    spawn = zap.json("replay", child)["records"][0]
    assert (spawn["approval"], spawn["unattended"]) == ("confirm", True)


def test_a_parent_without_bash_cannot_spawn_shell_commands(zap, model, tmp_path):
    target = tmp_path / "via-explorer.txt"
    model([{"match": "explorer parent", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {
            "action": "spawn", "cli": "sh", "task": f"touch {target}"}}]},
        {"text": "tried"}]}])
    proc = _run(zap, "--agent", "explorer", "--approval", "full", "explorer parent")
    assert proc.returncode == 0, proc.stderr
    assert not target.exists() and "does not grant `bash`" in proc.stderr


def test_a_shell_spawn_its_definition_cannot_make_is_refused_before_anyone_is_asked(zap, model):
    """New user, round 5: `run --agent reader` (no bash) asked the person
    'allow bash: echo hi?' and, answered y, refused it anyway; unattended, the
    model was told a person must approve (which could never help) and the
    denial was listed among the approvals. Now the definition's refusal comes
    first: nobody is asked, nothing is listed as denied."""
    target = zap.cwd / "never.txt"
    model([{"match": "reader parent", "loop": True, "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {
            "action": "spawn", "cli": "sh", "task": f"touch {target}"}}]},
        {"text": "tried"}]}])
    code, screen = _run_on_a_terminal(zap, "reader parent", b"y\r", options=("--agent", "explorer"))
    assert code == 0, screen
    assert "allow" not in screen and "does not grant `bash`" in screen, screen
    doc = json.loads(_run(zap, "--json", "--agent", "explorer", "reader parent").stdout)
    assert doc["status"] == "completed" and doc["denied_approvals"] == [], doc
    assert not target.exists()


def test_a_spawn_past_the_runs_fan_out_cap_is_refused_before_anyone_is_asked(zap, model):
    """New user, round 5: with --max-subagents 1 reached, a shell spawn
    asked 'allow bash: …?' and, answered y, was refused by the cap."""
    target = zap.cwd / "never.txt"
    model([{"match": "capped parent", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "capped child"}}]},
        {"tool_calls": [{"name": "subagent", "arguments": {
            "action": "spawn", "cli": "sh", "task": f"touch {target}"}}]},
        {"text": "tried"}, {"text": "done"}]},
        {"match": "capped child", "turns": [{"text": "child done"}]}])
    code, screen = _run_on_a_terminal(zap, "capped parent", b"y\r", options=("--max-subagents", "1"))
    assert code == 0, screen
    assert "allow" not in screen and "so it starts no more" in screen, screen
    assert not target.exists()


def test_foreground_run_holds_its_deadline_while_the_model_hangs(zap, model):
    model([{"match": "hang forever", "turns": [{"text": "late", "delay_s": 60}]}])
    proc = _run(zap, "--timeout", "2", "hang forever", timeout=40)
    assert proc.returncode == 1 and "timed out after 2s" in proc.stderr


def _run_on_a_terminal(zap, task: str, answers: bytes, timeout: float = 40,
                       options: tuple[str, ...] = ()) -> tuple[int, str]:
    """`zapcli run [OPTIONS] TASK` with a real pseudo-terminal as stdin/stdout/stderr;
    `answers` is typed once the approval question shows."""
    import os
    import pty
    import select as sel

    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes `zapcli run` on the terminal
        os.chdir(zap.cwd)
        os.execve(sys.executable, [sys.executable, "-m", "zapcli", "run", *options, task], zap.env)
    seen, typed, give_up = b"", False, time.monotonic() + timeout
    while time.monotonic() < give_up:
        ready, _, _ = sel.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if not typed and b"allow" in seen:
            os.write(fd, answers)
            typed = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), seen.decode("utf-8", "replace")


def test_terminal_prompt_end_of_input_denies_instead_of_crashing(zap, model, tmp_path):
    """Tryout: Ctrl-D at the approval question raised a bare EOFError into the run."""
    target = zap.cwd / "made.txt"  # in the workspace: the sandbox would refuse a file outside
    model([{"match": "tty parent", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"touch {target}"}}]},
        {"text": "parent done"}]}])
    code, screen = _run_on_a_terminal(zap, "tty parent", b"\x04")  # ^D: end of input
    assert code == 0, screen
    assert "allow" in screen and "parent done" in screen
    assert "EOFError" not in screen and "Traceback" not in screen
    assert not target.exists()


def test_terminal_prompt_yes_runs_the_tool(zap, model, tmp_path):
    target = zap.cwd / "made.txt"  # in the workspace: the sandbox would refuse a file outside
    model([{"match": "tty yes", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"touch {target}"}}]},
        {"text": "parent done"}]}])
    code, screen = _run_on_a_terminal(zap, "tty yes", b"y\r")
    assert code == 0, screen
    assert target.exists()


def test_sigterm_to_run_names_the_subagents_still_running(zap, model):
    """Tryout: a SIGTERMed `zapcli run` exited silently while its children ran on."""
    model([{"match": "term parent", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": "term child"}}]},
        {"text": "never", "delay_s": 60}]},
        {"match": "term child", "turns": [{"text": "late", "delay_s": 60}]}])
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "run", "term parent"], env=zap.env,
                            cwd=zap.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        run_id = proc.stderr.readline().split()[1].rstrip(":")
        env = {**zap.env, "ZAPCLI_SESSION": run_id}
        wait_until(lambda: json.loads(subprocess.run(
            [sys.executable, "-m", "zapcli", "list", "--json"], env=env, capture_output=True,
            text=True).stdout)["count"] == 1, timeout=30)
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "stopping 1 subagent(s) of this run still running" in err
    (child,) = json.loads(subprocess.run([sys.executable, "-m", "zapcli", "list", "--json"], env=env,
                                         capture_output=True, text=True).stdout)["subagents"]
    assert child["status"] == "cancelled"  # C26: nothing outlives its run
    assert "Traceback" not in err
    subprocess.run([sys.executable, "-m", "zapcli", "kill", "--all"], env=env, timeout=30)


@pytest.mark.timeout(90)
def test_deadline_holds_while_a_tool_holds_the_interpreter(zap, model):
    """Tryout: a runaway regex in `grep` starved the watchdog thread, so the
    deadline held only once an observer came by (deadline + 10 s)."""
    from tests.conftest import final_status

    (zap.cwd / "redos.txt").write_text("a" * 5000 + "!\n")
    model([{"match": "redos", "turns": [
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "(a+)+$", "path": "redos.txt"}}]},
        {"text": "never"}]}])
    sid = _spawn(zap, "redos please", "--timeout", "3", "--agent", "explorer")
    # nobody runs a zapcli command from here on: only the child can end it
    wait_until(lambda: final_status(zap.trail(sid)), timeout=30, interval=0.2)
    assert final_status(zap.trail(sid)) == "timeout"
    runner = next(r for r in json.loads("[" + ",".join(
        zap.trail(sid).read_text().splitlines()) + "]") if r["type"] == "process")
    wait_until(lambda: not psutil.pid_exists(runner["pid"])
               or psutil.Process(runner["pid"]).status() == psutil.STATUS_ZOMBIE, timeout=10)


def test_a_message_that_arrives_too_late_is_reported_undelivered(zap, model):
    """Tryout: `send` said "queued" and nothing but `replay` ever said it was
    lost. `send` says it arrives only if the work makes another model call,
    and wait, poll and list say it never arrived, with `continue` to go on."""
    srv = model([{"match": "last word", "turns": [{"text": "the final answer", "hold": "last"}]}])
    sid = _spawn(zap, "last word")
    wait_until(lambda: srv.requests, timeout=30, interval=0.1)  # inside its one and last call
    sent = zap("send", sid, "one more thing")
    assert sent.returncode == 0
    assert "before its next model call, if it makes one" in sent.out, sent.out
    assert f"zapcli continue {sid} TEXT otherwise" in sent.out, sent.out
    srv.release("last")
    waited = zap("wait", sid, "--timeout", "30")
    assert waited.returncode == 0
    view = zap.json("poll", sid)["subagents"][0]
    assert view["undelivered_messages"] == 1
    for said in (waited.out, zap("poll", sid).out):
        assert "Not delivered: 1 message(s)" in said and f"zapcli continue {sid} TEXT" in said, said
    listed = zap("list").out
    assert f"not delivered: 1 message(s), it ended first (zapcli continue {sid[-8:]} TEXT" in listed


def test_a_subagent_cannot_loosen_the_config_or_forge_approvals(zap, model):
    """Tryout: with zapcli's folders inside the workspace (running from $HOME
    outside git), `workspace` mode let a subagent write `approval: full`."""
    cfg = zap.cwd / "dot-config-zapcli"
    cfg.mkdir()
    model([{"match": "loosen", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "dot-config-zapcli/config.yaml",
                                                         "content": "approval: full\n"}}]},
        {"text": "tried"}]}])
    proc = zap("spawn", "--unattended", "--", "loosen it", env={"ZAPCLI_CONFIG_HOME": str(cfg)})
    sid = proc.out.strip()
    assert zap("wait", sid, "--timeout", "30", env={"ZAPCLI_CONFIG_HOME": str(cfg)}).returncode == 0
    result = next(r for r in _records(zap, sid) if r["type"] == "tool_result")
    assert not result["ok"] and "zapcli's own folder" in result["content"]
    assert not (cfg / "config.yaml").exists()


def test_the_subagent_tool_reaches_only_the_runs_own_subagents(zap, model):
    """Tryout: a read-only, unattended parent polled another session's subagent
    (reading its output) and killed it."""
    m = f"sleep {sleep_marker(3325)}"
    victim = zap("spawn", "--cli", "sh", "--", f"echo victim-secret; exec {m}",
                 env={"ZAPCLI_SESSION": "victim-session"}).out.strip()
    try:
        model([{"match": "reach out", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "poll", "ids": [victim]}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "kill", "ids": [victim]}}]},
            {"text": "done"}]}])
        proc = _run(zap, "--agent", "explorer", "--unattended", "reach out")
        assert proc.returncode == 0, proc.stderr
        assert "victim-secret" not in proc.stderr + proc.stdout
        assert proc.stderr.count("not a subagent this run started") == 2
        assert zap.status(victim) == "running"
    finally:
        zap("kill", victim)


def test_a_killed_run_keeps_its_tokens_and_json_gets_a_document(zap, model):
    """Tryout: SIGKILL lost the run's own tokens (they were recorded at the
    end), and SIGTERM with --json printed nothing on stdout."""
    model([{"match": "spend then hang", "loop": True, "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}], "usage": _usage(111, 11)},
        {"text": "never", "delay_s": 60}]}])
    for sig, extra in ((signal.SIGKILL, ()), (signal.SIGTERM, ("--json",))):
        task = f"spend then hang ({sig.name})"  # its own conversation in the script
        proc = subprocess.Popen([sys.executable, "-m", "zapcli", "run", *extra, task],
                                env=zap.env, cwd=zap.cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        def own_input(run_id: str) -> int:
            doc = json.loads(subprocess.run(
                [sys.executable, "-m", "zapcli", "usage", "--all", "--json"], env=zap.env,
                capture_output=True, text=True).stdout)
            return next((s["own"]["input_tokens"] for s in doc["sessions"]
                         if s["session"] == run_id), 0)

        try:
            run_id = proc.stderr.readline().split()[1].rstrip(":")
            # recorded while the run still runs (it then hangs in its second call)
            wait_until(lambda rid=run_id: own_input(rid) == 111, timeout=30, interval=0.2)
            proc.send_signal(sig)
            out, _err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        assert own_input(run_id) == 111, sig
        if extra:
            assert proc.returncode == 143
            assert json.loads(out)["status"] == "cancelled"
