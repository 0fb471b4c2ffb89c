"""Attempts across backends with a real agent CLI (#23): the pinned claude
against the scripted Anthropic server beside the built-in agent against the
scripted Chat Completions server, one task, each in its own tree and its own
scratch folder; `attempts` shows the CLI's tokens and cost; `pick` merges
claude's work."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends import clitest as ct
from zapcli.money import dollars
from zapcli.testing.server import ScriptedServer

TASK = "ATTEMPT-CLI write answer.txt"
CLAUDE = [{"match": "ATTEMPT-CLI", "turns": [
    {"text": "Writing it.", "tool_calls": [{"name": "Bash", "arguments": {
        "command": 'echo from-claude > answer.txt; echo "$TMPDIR" > tmp.txt',
        "description": "write the answer"}}]},
    {"text": "Wrote answer.txt."}]}]
AGENT = [{"match": "ATTEMPT-CLI", "turns": [
    {"tool_calls": [{"name": "bash", "arguments": {
        "command": 'echo from-agent > answer.txt; echo "$TMPDIR" > tmp.txt'}}]},
    {"text": "wrote it"}]}]


@pytest.fixture
def claude_server():
    with ScriptedServer(CLAUDE, protocol="anthropic") as srv:
        yield srv


def test_claude_and_the_built_in_agent_attempt_one_task(zap, repo, model, claude_server, tmp_path):
    ct.configure(zap, "claude")
    model(AGENT)
    env = ct.cli_env("claude", claude_server, tmp_path / "home")
    proc = zap("spawn", "--attempt-cli", "claude,zapcli", "--approval", "full", "--", TASK, env=env)
    assert proc.returncode == 0, proc.err
    claude_id, agent_id = proc.out.split()
    assert zap("wait", "--timeout", "180", claude_id, agent_id).returncode == 0, (
        ct.dump(zap, claude_id) + ct.dump(zap, agent_id))

    doc = {a["id"]: a for a in zap.json("attempts", claude_id)["attempts"]}
    for sid, who in ((claude_id, "claude"), (agent_id, "agent")):
        tree = Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])
        assert (tree / "answer.txt").read_text() == f"from-{who}\n"
        assert (tree / "tmp.txt").read_text().strip() == str(zap.home / "subagents" / f"{sid}.tmp")
        assert doc[sid]["tokens"]["input_tokens"] > 0 and doc[sid]["diff"]["files"] == 2
    assert doc[claude_id]["cli"] == "claude" and isinstance(doc[claude_id]["cost_usd"], float)
    assert dollars(doc[claude_id]['cost_usd']) in zap("attempts", agent_id).out

    picked = zap.json("pick", claude_id)
    assert picked["merged"] and (repo / "answer.txt").read_text() == "from-claude\n"
    assert agent_id in picked["removed"]
