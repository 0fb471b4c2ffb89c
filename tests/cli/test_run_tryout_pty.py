"""`zapcli run` on a real pty (tryout regressions, each failed before its fix):
the `subagents_save` question shows what is saved — the file, whether it
REPLACES one, the grant (tools, MCP servers, env) and the YAML or its diff."""

from __future__ import annotations

import sys

import pytest

from tests.cli.test_run_approvals_pty import Terminal
from zapcli.testing import ScriptedServer

OLD = "name: my-reviewer\ndescription: Reviews docs.\ntools: [read]\n"
NEW = ("name: my-reviewer\ndescription: Reviews docs.\ntools: [read, bash]\nenv: [GITHUB_TOKEN]\n"
       "prompt: |\n" + "".join(f"  line {i} of the prompt\n" for i in range(60)))
FRESH = "name: fresh-one\ndescription: New.\ntools: [grep]\nprompt: You grep.\n"


def _save(text: str) -> dict:
    return {"tool_calls": [{"name": "subagents_save", "arguments": {"yaml": text}}]}


@pytest.mark.timeout(120)
def test_the_save_question_shows_the_file_the_grant_and_the_yaml(zap):
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    (folder / "my-reviewer.yml").write_text(OLD)
    script = [{"match": "AUTHOR-save", "turns": [_save(NEW), _save(FRESH), {"text": "parent done"}]}]
    with ScriptedServer(script) as srv:
        env = dict(zap.env, OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                   OPENAI_API_KEY="sk-test-pty-0123456789", TERM="dumb")
        term = Terminal([sys.executable, "-m", "zapcli", "run", "--approval", "workspace",
                         "AUTHOR-save a reviewer"], env, str(zap.cwd))
        first = term.expect(b"allow").decode(errors="replace")
        term.send(b"y\r")
        term.expect(b"fresh-one (workspace)?")
        second = term.seen.decode(errors="replace")[len(first):]
        term.send(b"y\r")
        assert term.finish() == 0
    assert f"REPLACES {folder / 'my-reviewer.yml'}" in first
    assert "tools: read, bash" in first and "env: GITHUB_TOKEN" in first
    assert "mcp servers: none" in first
    assert "+tools: [read, bash]" in first and "-tools: [read]" in first
    assert "more lines" in first and "line 59 of the prompt" not in first
    assert f"new file {folder / 'fresh-one.yml'}" in second and "tools: grep" in second
    assert "prompt: You grep." in second and "REPLACES" not in second
    assert (folder / "my-reviewer.yml").read_text() == NEW


@pytest.mark.timeout(120)
def test_a_killed_runs_children_are_denied_not_left_waiting(zap):
    """Tryout: children of a SIGKILLed `zapcli run` sat in awaiting_approval
    until their deadline, then ended `timeout`."""
    import json
    import os
    import signal

    from tests.conftest import wait_until

    script = [
        {"match": "CHILD-orphan", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo ran >> out.txt"}}]},
            {"text": "child finished"}]},
        {"match": "PARENT-orphan", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn",
                                                                "task": "CHILD-orphan job"}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait"}}]},
            {"text": "parent done"}]}]
    with ScriptedServer(script) as srv:
        env = dict(zap.env, OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                   OPENAI_API_KEY="sk-test-pty-0123456789", TERM="dumb")
        term = Terminal([sys.executable, "-m", "zapcli", "run", "PARENT-orphan"], env, str(zap.cwd))
        try:
            term.expect(b"allow")
            pid = term.proc.pid
            term.proc.send_signal(signal.SIGKILL)
            term.proc.wait(10)
        finally:
            os.close(term.master)
        (child,) = zap.json("list", "--all")["subagents"]
        sid = child["id"]
        # C26: nothing outlives its run; its pending request is denied on the way out
        wait_until(lambda: zap.json("poll", "--no-wait", sid)["subagents"][0]["status"]
                   in ("completed", "cancelled"), timeout=20, interval=0.5)
    records = [json.loads(line) for line in zap.trail(sid).read_text().splitlines()]
    (decision,) = [r for r in records if r["type"] == "approval_decision"]
    assert decision["decision"] == "deny"
    end = next(r for r in records if r["type"] == "status")
    assert f"pid {pid}" in (decision["reason"] + end["reason"] if end["reason"] else decision["reason"])
    spawn = next(r for r in records if r["type"] == "spawn")
    assert spawn["relay"]["pid"] == pid
    assert not (zap.cwd / "out.txt").exists()
