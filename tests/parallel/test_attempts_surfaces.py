"""Parallel coding for models (#23): `zapcli call` and the MCP server take
`output_schema` inline and `attempts` on spawn, and answer the diff,
attempts, merge and pick actions. A merge changes the person's checkout: it
is approved like a configuration change — by the MCP client's user through
an elicitation, refused where nobody can be asked, and allowed outright in
`full` mode; the `subagent` tool of `zapcli run` asks its terminal
(`zapcli.approvals`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mcp import Client

from tests.mcp.conftest import run, server_params, text
from tests.parallel.conftest import git
from zapcli.approvals import Policy

SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


def _call(zap, doc: dict, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zapcli", "call"], input=json.dumps(doc), text=True,
                          cwd=zap.cwd, env={**zap.env, **env}, capture_output=True, timeout=60)


def test_call_spawns_attempts_with_an_inline_schema_and_merges_only_when_allowed(zap, repo):
    res = _call(zap, {"action": "spawn", "cli": "sh", "attempts": 2, "output_schema": SCHEMA,
                      "task": 'echo "{\\"n\\": 1}"; echo "$ZAPCLI_SUBAGENT_ID" > who.txt'})
    assert res.returncode == 0, res.stderr
    assert "2 attempts, each in its own worktree" in res.stdout and "action attempts" in res.stdout
    first, second = [line.split(":")[0].strip() for line in res.stdout.splitlines()
                     if line.strip().startswith("sa_")]
    assert zap("wait", "--timeout", "60", first, second).returncode == 0
    assert zap.json("poll", "--no-wait", first)["subagents"][0]["structured"] == {"n": 1}
    compared = _call(zap, {"action": "attempts", "id": first, "check": "test -s who.txt"})
    assert compared.returncode == 0 and compared.stdout.count("check: passed") == 2
    assert "action pick" in compared.stdout and "zapcli pick" not in compared.stdout
    diff = _call(zap, {"action": "diff", "id": second, "name_only": True})
    assert diff.stdout.strip().endswith("who.txt")

    head = git(repo, "rev-parse", "HEAD")
    refused = _call(zap, {"action": "merge", "id": second})
    assert refused.returncode == 1 and "a person approves it (workspace mode)" in refused.stdout
    assert git(repo, "rev-parse", "HEAD") == head and not (repo / "who.txt").exists()
    picked = _call(zap, {"action": "pick", "id": second}, ZAPCLI_APPROVAL="full")
    assert picked.returncode == 0, picked.stdout
    assert (repo / "who.txt").read_text() == f"{second}\n" and f"removed the tree of {first}" in picked.stdout
    again = _call(zap, {"action": "pick", "id": second}, ZAPCLI_APPROVAL="full")  # up to date
    assert again.returncode == 0 and "nothing to merge, main already has all of it" in again.stdout
    bad = _call(zap, {"action": "spawn", "cli": "sh", "task": "true", "output_schema": "{not json"})
    assert bad.returncode == 2 and "the inline schema is not JSON" in bad.stdout


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_mcp_client_user_approves_or_refuses_a_merge(zap, repo, mode):
    """2026-07-28 (auto): an InputRequiredResult the client answers and the call
    is made again; legacy: an elicitation request on the connection."""
    import mcp_types as types

    asked: list[str] = []

    async def answer(context, params):
        asked.append(params.message)
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="decline", content={"reason": "not this one"})

    async def go():
        async with Client(server_params(zap), elicitation_callback=answer, mode=mode) as c:
            ids = []
            for name in ("kept.txt", "refused.txt"):
                res = await c.call_tool("spawn", {"cli": "sh", "task": f"echo x > {name}",
                                                  "worktree": True})
                ids.append(res.structured_content["id"])
            await c.call_tool("wait", {"ids": ids, "timeout": 60})
            return ids, [await c.call_tool("merge", {"id": i}) for i in ids]

    ids, (merged, refused) = run(go)
    assert len(asked) == 2 and f"merge {ids[0]}" in asked[0]
    assert not merged.is_error and "merged into main" in text(merged)
    assert refused.is_error and "not approved (not this one)" in text(refused)
    assert (repo / "kept.txt").exists() and not (repo / "refused.txt").exists()


def test_an_mcp_client_that_cannot_ask_gets_a_refusal(zap, repo):
    async def go():
        async with Client(server_params(zap)) as c:
            res = await c.call_tool("spawn", {"cli": "sh", "task": "echo x > x.txt", "worktree": True})
            sid = res.structured_content["id"]
            await c.call_tool("wait", {"ids": [sid], "timeout": 60})
            return await c.call_tool("merge", {"id": sid})

    res = run(go)
    assert res.is_error and "nobody here can be asked" in text(res)
    assert not (repo / "x.txt").exists()


@pytest.mark.parametrize("mode", ["confirm", "workspace", "auto-edit", "full"])
def test_the_run_subagent_tool_asks_for_a_merge_like_a_configuration_change(tmp_path, mode):
    policy = Policy(mode, str(tmp_path), str(tmp_path), (), False)
    for action in ("merge", "pick"):
        verdict = policy.check("subagent", {"action": action, "id": "sa_20260101_00000001",
                                            "squash": True})
        assert verdict.action == ("allow" if mode == "full" else "ask"), (mode, action)
        assert verdict.summary.startswith(f"{action} --squash sa_20260101_00000001")
    check = policy.check("subagent", {"action": "attempts", "id": "x", "check": "make test"})
    assert check.action == ("allow" if mode == "full" else "ask") and "make test" in check.summary
    assert policy.check("subagent", {"action": "attempts", "id": "x"}).action == "allow"
    assert policy.check("subagent", {"action": "diff", "id": "x"}).action == "allow"
    unattended = Policy(mode, str(tmp_path), str(tmp_path), (), True)
    assert unattended.check("subagent", {"action": "merge", "id": "x"}).action == (
        "allow" if mode == "full" else "deny")


def test_a_merge_that_would_be_refused_says_why_before_anyone_is_asked(zap, repo):
    """A new user's trial: merging a subagent that has no worktree asked for
    approval first, then said there was nothing to merge. What a merge or a
    pick refuses without looking at the work (no worktree, not an attempt,
    still running) is said first, and nobody is asked: not `call`, not the
    MCP client's user, not the person at `zapcli run`'s terminal."""
    import mcp_types as types

    from zapcli.cli.approver import TerminalApprover

    plain = zap.spawn_sh("echo no tree")
    running = zap.spawn_sh("sleep 30", "--worktree")
    assert zap.wait_status(plain) == "completed"
    asked: list[str] = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async def go():
        async with Client(server_params(zap), elicitation_callback=answer) as c:
            return [await c.call_tool(action, {"id": sid}) for action, sid in
                    (("merge", plain), ("pick", plain), ("merge", running))]

    said = ["has no worktree", "not spawned with `attempts`", "is running; only a finished"]
    for (action, sid), why, mcp in zip((("merge", plain), ("pick", plain), ("merge", running)),
                                       said, run(go), strict=True):
        called = _call(zap, {"action": action, "id": sid})
        for text_ in (called.stdout, text(mcp)):
            assert why in text_ and "approve" not in text_, (action, text_)
    assert asked == []
    approver = TerminalApprover("workspace", str(repo), str(repo), (), unattended=True)
    for action, sid in (("merge", plain), ("pick", plain), ("merge", running)):
        assert approver.check("subagent", {"action": action, "id": sid}).action == "allow"
    zap("kill", running)
