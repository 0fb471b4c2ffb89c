"""A shell a model chose is sandboxed (C33's last step, issue 27 item 8).

A model holding `zapcli mcp serve` (or calling `zapcli call`) spawns `cli:
sh` with a command that writes outside the workspace and reaches the
network. It runs in the sandbox, as a `zapcli run`'s own shell spawn does:
it works in the workspace, lands nothing in `outside`, reaches no listener.
The server's owner may turn that off in their own config
(`model_shell_sandbox: off`), and `doctor` says which it is. Tested as root
and as another local user.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.conftest import Zap
from tests.mcp.conftest import server_params
from tests.redteam.harness import Keys, as_root, needs_setpriv
from tests.sandbox.conftest import needs_bwrap

IDS = re.compile(r"\bsa_\d{8}_[0-9a-f]{8}\b")


def _attack(outside: Path, listener, marker: str) -> str:
    return (f"echo ran > ran-{marker}.txt; id > {outside}/{marker}.txt; "
            f"curl -s -m 5 {listener.url}/{marker}; true")


def _spawn_over_mcp(zap: Zap, task: str) -> str:
    async def go() -> str:
        async with Client(server_params(zap)) as c:
            sid = (await c.call_tool("spawn", {"task": task, "cli": "sh"})).structured_content["id"]
            for _ in range(5):
                done = await c.call_tool("wait", {"ids": [sid], "timeout": 50})
                if "still running" not in str(done.content):
                    break
            return str(sid)
    return anyio.run(go)


@needs_bwrap
@pytest.mark.timeout(120)
def test_an_mcp_shell_spawn_runs_in_the_sandbox(zap: Zap, outside, listener):
    marker = "c33-mcp"
    sid = _spawn_over_mcp(zap, _attack(outside, listener, marker))
    assert zap.status(sid) == "completed"
    assert (zap.cwd / f"ran-{marker}.txt").exists()  # it ran, in the workspace
    assert not (outside / f"{marker}.txt").exists()
    assert not listener.saw(marker)


@needs_bwrap
@pytest.mark.timeout(120)
def test_a_call_shell_spawn_runs_in_the_sandbox(zap: Zap, outside, listener):
    marker = "c33-call"
    res = zap("call", json.dumps({"action": "spawn", "cli": "sh",
                                  "task": _attack(outside, listener, marker)}))
    [sid] = IDS.findall(res.out)
    assert zap("wait", sid, "--timeout", "60").returncode == 0
    assert (zap.cwd / f"ran-{marker}.txt").exists()
    assert not (outside / f"{marker}.txt").exists()
    assert not listener.saw(marker)


@needs_bwrap
@pytest.mark.timeout(120)
def test_the_owner_may_turn_it_off_and_doctor_says_which(zap: Zap, outside, listener):
    doctor = zap("doctor").out
    assert re.search(r"model shells?.*sandbox", doctor, re.I | re.S), doctor
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text("model_shell_sandbox: off\n")
    off = zap("doctor").out
    assert "model_shell_sandbox: off" in off, off
    marker = "c33-off"
    res = zap("call", json.dumps({"action": "spawn", "cli": "sh",
                                  "task": _attack(outside, listener, marker)}))
    [sid] = IDS.findall(res.out)
    assert zap("wait", sid, "--timeout", "60").returncode == 0
    assert (outside / f"{marker}.txt").exists()  # the owner's choice, said by doctor


@needs_bwrap
@pytest.mark.timeout(60)
def test_a_workspace_config_cannot_turn_it_off(zap: Zap, outside, listener):
    """A cloned repository's `.zapcli/config.yaml` does not decide it."""
    (zap.cwd / ".zapcli").mkdir()
    (zap.cwd / ".zapcli" / "config.yaml").write_text("model_shell_sandbox: off\n")
    marker = "c33-ws"
    res = zap("call", json.dumps({"action": "spawn", "cli": "sh",
                                  "task": _attack(outside, listener, marker)}))
    for sid in IDS.findall(res.out):
        zap("wait", sid, "--timeout", "60")
    assert not (outside / f"{marker}.txt").exists()
    assert not listener.saw(marker)


@as_root
@needs_setpriv
@needs_bwrap
@pytest.mark.timeout(120)
def test_as_another_user_a_call_shell_spawn_runs_in_the_sandbox(other_user, listener, tmp_path):
    keys = Keys()
    user = other_user(keys, "http://127.0.0.1:9/v1")
    outside = user.root / "OUT"
    outside.mkdir()
    os.chown(outside, user.uid, user.uid)
    marker = "c33-user"

    def zap_as(*args: str) -> str:
        return subprocess.run(user.argv(*args), env=user.env, cwd=user.work, capture_output=True,
                              text=True, timeout=60).stdout
    out = zap_as("call", json.dumps({"action": "spawn", "cli": "sh",
                                     "task": _attack(outside, listener, marker)}))
    [sid] = IDS.findall(out)
    zap_as("wait", sid, "--timeout", "60")
    assert (user.work / f"ran-{marker}.txt").exists()
    assert not (outside / f"{marker}.txt").exists()
    assert not listener.saw(marker)
