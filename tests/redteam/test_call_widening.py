"""A model's spawn from outside zapcli (`zapcli call`, `mcp serve`) is held
to the person's own settings (adversary round on issue 27's boundary): the
approval mode in their config is its ceiling, and `cwd` stays in the
server's workspace (or their `writable_roots`); more only with the MCP
client's user's approval.

Before: the `spawn` action took `approval: full` and any `cwd` from the
caller. A model choosing `full` got an agent whose commands wrote control
files (`.git/config`'s core.fsmonitor, run by the user's next git status);
`cwd` picked the folder that became writable.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.conftest import Zap
from tests.mcp.conftest import server_params
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap
IDS = re.compile(r"\bsa_\d{8}_[0-9a-f]{8}\b")


@pytest.mark.timeout(120)
def test_call_spawn_approval_full_over_the_users_workspace_mode(zap: Zap, model, outside):
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text("approval: workspace\n")
    subprocess.run(["git", "init", "-q"], cwd=zap.cwd, check=True)
    model([{"match": "tidy", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command":
            f"git config core.fsmonitor 'id > {outside}/FSMON; false'; echo x > {outside}/BASH"}}]},
        {"text": "tidied"}]}])
    res = zap("call", json.dumps({"action": "spawn", "task": "tidy", "approval": "full",
                                  "unattended": True}))
    for sid in IDS.findall(res.out):
        zap("wait", sid, "--timeout", "60")
    subprocess.run(["git", "status"], cwd=zap.cwd, capture_output=True)
    ran = [p.name for p in outside.iterdir()]
    assert not ran, f"a model's call spawned a full-mode agent: {ran} ({res.out})"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cli", ["sh", "zapcli"])
def test_call_spawn_cwd_outside_the_workspace(zap: Zap, model, outside, cli):
    """`cwd` names a folder outside the server's workspace: the child's
    workspace (where its sandbox lets it write) would be that folder."""
    model([{"match": "plant", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "planted.txt", "content": "x"}}]},
        {"text": "planted"}]}])
    task = "echo x > planted.txt" if cli == "sh" else "plant it"
    res = zap("call", json.dumps({"action": "spawn", "task": task, "cli": cli,
                                  "cwd": str(outside), "unattended": cli != "sh" or None}))
    for sid in IDS.findall(res.out):
        zap("wait", sid, "--timeout", "60")
    assert not (outside / "planted.txt").exists(), res.out
    assert "Traceback" not in res.err


@pytest.mark.timeout(120)
def test_mcp_spawn_approval_full_over_the_users_workspace_mode(zap: Zap, model, outside):
    subprocess.run(["git", "init", "-q"], cwd=zap.cwd, check=True)
    model([{"match": "tidy", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command":
            f"git config core.fsmonitor 'id > {outside}/FSMON; false'"}}]},
        {"text": "tidied"}]}])

    async def go() -> str:
        async with Client(server_params(zap)) as c:
            got = await c.call_tool("spawn", {"task": "tidy", "approval": "full", "unattended": True})
            for sid in IDS.findall(str(got.content)):
                await c.call_tool("wait", {"ids": [sid], "timeout": 50})
            return str(got.content)
    said = anyio.run(go)
    subprocess.run(["git", "status"], cwd=zap.cwd, capture_output=True)
    assert not (outside / "FSMON").exists(), said


@pytest.mark.timeout(120)
def test_the_persons_own_full_mode_lets_a_call_spawn_full(zap: Zap, model, outside):
    """The ceiling is the person's setting, not a fixed one: a server they
    run with ZAPCLI_APPROVAL=full may spawn full-mode agents."""
    model([{"match": "wide", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": str(outside / "wide.txt"),
                                                       "content": "x"}}]},
        {"text": "written"}]}])
    res = zap("call", json.dumps({"action": "spawn", "task": "wide", "approval": "full"}),
              env={"ZAPCLI_APPROVAL": "full"})
    for sid in IDS.findall(res.out):
        zap("wait", sid, "--timeout", "60")
    assert (outside / "wide.txt").exists(), res.out + res.err
