"""Another local user takes the name of the execute-only copies' folder
first, and a command the victim's agent CLI runs reaches the CLI again
(adversary round 9, on 56fcc13).

The CLI runs from an execute-only copy so that the kernel keeps it not
dumpable and no command it runs reaches its fds (round 8's route: append
to the stream zapcli reads its usage from through `/proc/<cli>/fd/1`). The
copies live in `/var/tmp/zapcli-<uid>/exec-only/`: a fixed name in a folder
every local user may create names in. A folder there that is not the
user's own makes zapcli run the CLI as it is (`execonly.copy` raises, the
sandbox says why at start): so another local user who makes
`/var/tmp/zapcli-<victim's uid>` before the victim's first run (or after
`/var/tmp` was cleaned: systemd-tmpfiles ages it) turns the protection off
for every later run of the victim's, and round 8's attack works again.

Here the victim (a second local user) spawns claude with `--max-cost
0.25` (a call ~$0.10) on a task whose every turn runs `pad.py`: found
through `/proc/<cli>/fd/1`, the stream gets, after each line the CLI says,
the start of a string its next line ends, so no line parses (each call's
usage lost to the meter); root (to the victim, any other user) made the
folder first.

The outside effect: the model calls the provider answered past the budget.

Status against 56fcc13: SUCCEEDED — the start diagnostic said the copy
could not be made, pad.py found `/proc/2/fd/1`, and 22 calls were answered
to the 30 s deadline (the same run, the name left free: 3, the CLI out of
reach). Fixed since, the class
(a name another user can take first): where `/var/tmp/zapcli-<uid>` is not
the user's own, the copies go in a folder of the user's own made under a
name no one can hold first (`mkdtemp`: `/var/tmp/zapcli-<uid>-XXXXXXXX`),
found again by its owner and mode on later runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import agent_cli
from tests.redteam.harness import Keys, as_root, needs_setpriv
from tests.redteam.test_adv8_cli_stream import FIND_STREAM, SONNET
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing.server import ScriptedServer

SWALLOW = r'''
import os, sys, time
if os.path.exists("swallow.started"):
    print("PADDED (already)"); sys.exit()
''' + FIND_STREAM + r'''
print("PADDED", targets)
if targets and os.fork() == 0:  # left running: each line the CLI says, the start of a string
    os.setsid()  # that its next line ends, so no line after it parses (each call's usage lost)
    fd = os.open(targets[0], os.O_WRONLY | os.O_APPEND)
    open("swallow.started", "w").close()
    seen = -1
    while True:
        size = os.fstat(fd).st_size
        if size != seen:
            if os.pread(os.open(targets[0], os.O_RDONLY), 1, size - 1) == b"\n":
                os.write(fd, b'{"s": "')
            seen = os.fstat(fd).st_size
        time.sleep(0.0005)
'''
BASH = {"name": "Bash", "arguments": {"command": "python3 pad.py", "description": "check"}}


@as_root
@needs_setpriv
@needs_bwrap
@pytest.mark.timeout(300)
@pytest.mark.parametrize("squatted", [True, False])  # False: the same run, the name left free
def test_a_folder_another_user_made_first_leaves_the_cli_out_of_reach(
        other_user: Any, squatted: bool) -> None:
    user = other_user(Keys(), "http://127.0.0.1:9")
    squat = Path("/var/tmp") / f"zapcli-{user.uid}"
    for old in Path("/var/tmp").glob(f"zapcli-{user.uid}*"):  # a run of an earlier test's
        shutil.rmtree(old, ignore_errors=True)
    if squatted:
        squat.mkdir(mode=0o755)  # root's: to the victim, another user's
    try:
        config = user.home / "config"
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.yaml").write_text(
            f"backends:\n  claude:\n    command: {agent_cli('claude')}\n"
            "prices:\n  scripted: {input: 0.01, output: 0.01}\n")
        (user.work / "pad.py").write_text(SWALLOW)
        for path in [config, *config.rglob("*"), user.work / "pad.py"]:
            os.chown(path, user.uid, user.uid)
        call = {"tool_calls": [BASH], "usage": {"prompt_tokens": 33000, "completion_tokens": 10},
                "generate_s": 0.3}
        with ScriptedServer([{"match": "loop and pay", "loop": True, "turns": [call]}],
                            protocol="anthropic") as srv:
            env = {**user.env, "ANTHROPIC_BASE_URL": srv.base_url,
                   "ANTHROPIC_API_KEY": "sk-ant-test-user-0123456789"}
            spawned = subprocess.run(user.argv(
                "spawn", "--cli", "claude", "--approval", "full", "--model", SONNET,
                "--max-cost", "0.25", "--timeout", "30", "--", "loop and pay"),
                env=env, cwd=user.work, capture_output=True, text=True, timeout=60)
            assert spawned.returncode == 0, spawned.stderr
            subprocess.run(user.argv("wait", spawned.stdout.strip(), "--timeout", "90"), env=env,
                           cwd=user.work, capture_output=True, timeout=120)
            calls = len(srv.requests)
            said = [m for m in json.dumps(srv.requests).split("\\n") if "PADDED" in m][:1]
    finally:
        for made in Path("/var/tmp").glob(f"zapcli-{user.uid}*"):
            shutil.rmtree(made, ignore_errors=True)
    assert said, calls  # pad.py ran
    assert calls <= 4, (calls, said)
