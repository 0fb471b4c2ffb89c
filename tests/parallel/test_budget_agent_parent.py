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


def _parent_and_child(zap, model, sleep_s: int, child: str, child_turn: dict) -> tuple[str, str]:
    """A parent with a budget of 7,600 tokens: 2,500 spent on its first call
    (a `sleep`), 500 on its last; while the sleep runs, a child of it starts
    (its share held against the parent's budget) and answers `child_turn`."""
    model([
        {"match": "parent fans out", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": f"sleep {sleep_s}"}}],
             "usage": _u(2000, 500)},
            {"text": "all done", "usage": _u(400, 100)}]},
        {"match": child, "loop": True, "turns": [{**child_turn, "usage": _u(100, 10)}]}])
    sid = zap("spawn", "--approval", "full", "--max-tokens", "7600", "--",
              "parent fans out").out.strip()
    wait_until(lambda: '"tool_call"' in zap.trail(sid).read_text(), 30)
    kid = zap("spawn", "--", child, env={"ZAPCLI_SUBAGENT_ID": sid}).out.strip()
    assert kid.startswith("sa_")
    return sid, kid


@pytest.mark.timeout(120)
def test_a_budgeted_agent_parent_waits_for_its_children_to_return(zap, model):
    sid, kid = _parent_and_child(zap, model, 2, "child sleeps", {"text": "child done", "delay_s": 4})
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
    sid, kid = _parent_and_child(zap, model, 3, "child hangs", {"text": "never", "delay_s": 60})
    os.kill(supervisor_pid(zap, kid), signal.SIGKILL)  # its trail never ends on its own
    assert zap("wait", "--timeout", "90", sid).returncode == 0, zap("replay", sid).out[-3000:]
    assert final_status(zap.trail(kid)) == "lost"
