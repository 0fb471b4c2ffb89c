"""#24.6: a `zapcli run` with no terminal cannot ask anyone, so its children
deny what would ask; the run says so in its stream (stderr, as it happens)
and in its report (`denied_approvals` in the --json document, a closing note
otherwise) — before, the child ended `completed` and only `replay` showed it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _script(marker: str) -> list[dict]:
    return [
        {"match": f"CHILD-{marker}", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {marker} > out.txt"}}]},
            {"text": "child finished"}]},
        {"match": f"PARENT-{marker}", "turns": [
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn",
                                                                "task": f"CHILD-{marker} job"}}]},
            {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait"}}]},
            {"text": "parent done"}]}]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("json_doc", [False, True])
def test_a_run_without_a_terminal_says_when_it_denied_a_childs_approval(zap, model, json_doc):
    marker = f"nodeny{int(json_doc)}"
    model(_script(marker))
    proc = subprocess.run([sys.executable, "-m", "zapcli", "run", *(["--json"] if json_doc else []),
                           f"PARENT-{marker}: delegate"], env=zap.env, cwd=zap.cwd,
                          capture_output=True, text=True, timeout=100, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert not (zap.cwd / "out.txt").exists()
    sid = zap.json("list", "--all")["subagents"][0]["id"]
    said = [x for x in proc.stderr.splitlines() if f"{sid} asked to run" in x]
    assert len(said) == 1 and f"echo {marker} > out.txt" in said[0] and "(r1): denied" in said[0]
    assert "needs a person's approval" in said[0], said
    if json_doc:
        [denied] = json.loads(proc.stdout)["denied_approvals"]
        assert (denied["id"], denied["req_id"], denied["tool"]) == (sid, "r1", "bash")
        assert "needs a person's approval" in denied["reason"]
    else:
        assert f"1 approval request(s) of this run's subagents denied without asking ({sid})" \
            in proc.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize("json_doc", [False, True])
def test_a_run_without_a_terminal_says_when_it_denied_its_own_call(zap, model, json_doc):
    """The run's own call that would ask (a `cli: sh` spawn is a shell
    command): denied at once, and listed at the end as its children's are —
    before, `denied_approvals` was empty and the run `completed` as if
    nothing had been refused (found by a new user's script)."""
    marker = f"owndeny{int(json_doc)}"
    model([{"match": f"PARENT-{marker}", "turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {
            "action": "spawn", "cli": "sh", "task": f"echo {marker} > out.txt"}}]},
        {"text": "parent done"}]}])
    proc = subprocess.run([sys.executable, "-m", "zapcli", "run",
                           *(["--json"] if json_doc else []), f"PARENT-{marker}: delegate"],
                          env=zap.env, cwd=zap.cwd, capture_output=True, text=True, timeout=100,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert not (zap.cwd / "out.txt").exists()
    assert zap.json("list", "--all")["subagents"] == []
    if json_doc:
        doc = json.loads(proc.stdout)
        [denied] = doc["denied_approvals"]
        assert (denied["id"], denied["tool"]) == (doc["run_id"], "subagent"), denied
        assert f"echo {marker}" in denied["summary"] and "approval" in denied["reason"], denied
        assert "↳ ?" not in proc.stderr and "↳ subagent " in proc.stderr, proc.stderr  # whose error
    else:
        assert "1 of this run's own tool calls (subagent) needed a person's approval and were " \
               "denied without asking" in proc.stderr, proc.stderr
