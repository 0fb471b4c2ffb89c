"""A budgeted *agent* parent (issue 28, the chaos round): when its children
hold their shares of its budget, its next model call does not fail; it waits
for them to return, as a run does, and goes on with what they spent.

The children are spawned by the parent's work (`zapcli spawn` with the
parent's marker, ZAPCLI_SUBAGENT_ID) while its first tool call runs."""

from __future__ import annotations

import os
import signal

import pytest

from tests.conftest import final_status, supervisor_pid, wait_until


def _u(prompt: int, completion: int = 0) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


@pytest.mark.timeout(120)
def test_a_budgeted_agent_parent_waits_for_its_children_to_return(zap, model):
    model([
        {"match": "parent fans out", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 2"}}],
             "usage": _u(2000, 500)},
            {"text": "all done", "usage": _u(400, 100)}]},
        {"match": "child sleeps", "loop": True, "turns": [
            {"text": "child done", "usage": _u(100, 10), "delay_s": 4}]}])
    sid = zap("spawn", "--approval", "full", "--max-tokens", "7600", "--",
              "parent fans out").out.strip()
    wait_until(lambda: '"tool_call"' in zap.trail(sid).read_text(), 30)
    kid = zap("spawn", "--", "child sleeps", env={"ZAPCLI_SUBAGENT_ID": sid}).out.strip()
    assert kid.startswith("sa_")
    assert zap("wait", "--timeout", "90", sid).returncode == 0, zap("replay", sid).out[-3000:]
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert doc["status"] == "completed", zap("replay", sid).out[-3000:]
    child = zap.json("poll", "--no-wait", kid)["subagents"][0]
    assert child["status"] == "completed", zap("replay", kid).out[-3000:]


@pytest.mark.timeout(120)
def test_a_child_found_gone_at_the_parents_check_returns_its_share_to_that_same_check(zap, model):
    """The parent's check is what finds its child gone (the runner killed, no
    one else looked): the share that look returns counts at once — the check
    is made again, not decided on what was held a moment before."""
    model([
        {"match": "parent fans out", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3"}}],
             "usage": _u(2000, 500)},
            {"text": "all done", "usage": _u(400, 100)}]},
        {"match": "child hangs", "loop": True, "turns": [
            {"text": "never", "usage": _u(100, 10), "delay_s": 60}]}])
    sid = zap("spawn", "--approval", "full", "--max-tokens", "7600", "--",
              "parent fans out").out.strip()
    wait_until(lambda: '"tool_call"' in zap.trail(sid).read_text(), 30)
    kid = zap("spawn", "--", "child hangs", env={"ZAPCLI_SUBAGENT_ID": sid}).out.strip()
    os.kill(supervisor_pid(zap, kid), signal.SIGKILL)  # its trail never ends on its own
    assert zap("wait", "--timeout", "90", sid).returncode == 0, zap("replay", sid).out[-3000:]
    assert final_status(zap.trail(kid)) == "lost"
