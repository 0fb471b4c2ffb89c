"""The person's own MCP servers never run an agent's code found through the
folder they start in.

zapcli starts the MCP servers of the person's `mcp.json` as the person,
outside the sandbox (`zapcli doctor`, a run's gateway). It started them in
the workspace, which a sandboxed agent writes: `python -m server` looks
for `server.py` there first, and `npx server` for
`node_modules/.bin/server` — so a module or program the agent wrote there
ran, unsandboxed, in place of the server the person configured (an
adversary's review). They now start in an empty folder of zapcli's own
(a `cwd` the person gives is taken from the workspace). The outside
effect: a file the planted code writes when it runs.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(180)]
NPX = shutil.which("npx")


def test_a_servers_module_or_program_planted_in_the_workspace_never_runs(zap, outside):
    servers = {"time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]}}
    if NPX:
        servers["fs"] = {"command": NPX, "args": ["--no-install", "mcp-server-filesystem", "."]}
    config = zap.home.parent / "config"
    config.mkdir(exist_ok=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    plant = (f"echo \"open('{outside}/python', 'w')\" > mcp_server_time.py && "
             "mkdir -p node_modules/.bin && "
             f"printf '#!/bin/sh\\n: > {outside}/npx\\n' > node_modules/.bin/mcp-server-filesystem && "
             "chmod +x node_modules/.bin/mcp-server-filesystem")
    sid = zap.spawn_sh(plant, "--sandbox")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    assert (zap.cwd / "mcp_server_time.py").exists()
    doctor = zap("doctor", timeout=120)
    assert sorted(p.name for p in outside.iterdir()) == [], doctor.out + doctor.err
    assert "time" in doctor.out + doctor.err  # it looked at the servers


def test_an_on_finish_command_never_runs_a_module_planted_where_it_was_spawned(zap, outside):
    """The person's `--on-finish` (and every event hook) ran in the folder the
    subagent was spawned from: `python -m notify` took the agent's
    `notify.py` there, with the keys."""
    done = outside.parent / "hook-ran"
    hook = f'{sys.executable} -m notify_planted 2>/dev/null; echo "$ZAPCLI_CWD" > {done}'
    plant = f"echo \"open('{outside}/on_finish', 'w')\" > notify_planted.py"
    sid = zap.spawn_sh(plant, "--sandbox", "--on-finish", hook)
    zap("wait", "--timeout", "60", sid)
    from tests.conftest import wait_until

    wait_until(done.exists, 30)
    assert sorted(p.name for p in outside.iterdir()) == []
    assert done.read_text().strip() == str(zap.cwd)  # it is told where it was spawned from
