"""A sandbox starts while this host's unix sockets come and go.

With the network off a sandbox covers every listening socket outside its
writable roots (`zapcli.sandbox.sockets`), as the kernel listed them a
moment before bwrap sets the sandbox up. A socket closed in that moment — a
server that exits (an ssh ControlMaster, a language server), or its folder
removed with it — was a path bwrap could not mount over ("Can't mkdir
parents for …" / "Can't create file at …": the read-only root), and the
sandbox never started: the subagent `failed` with nothing run. Here two
processes keep opening and closing sockets, one removing their folders
too, while sandboxes start; each sandbox must start and run its command
(the outside effect: what the command printed, and its exit).

Real bubblewrap, real sockets, the real CLI.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import Zap
from tests.sandbox.conftest import needs_bwrap
from zapcli.tools.shell import BashTool

# alone: its sockets come and go under every sandbox on the machine, and a
# test that runs bwrap itself (without zapcli's starts) would fail beside it
pytestmark = [needs_bwrap, pytest.mark.alone]
CHURNERS, PAUSE = "2", "0.02"  # two folders each, a socket open ~3 ms every ~25 ms
IDS = re.compile(r"\bsa_\d{8}_[0-9a-f]{8}\b")

# Each round: a listening socket in each of `n` folders under /var/tmp (a
# place no sandbox hides), open a few milliseconds, then closed and its file
# removed — and with `folders`, its folder too.
CHURN = r'''
import os, socket, sys, time
base, folders, n, pause = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), float(sys.argv[4])
os.makedirs(base, exist_ok=True)
open(base + ".up", "w").close()
i = 0
while os.path.exists(base + ".up"):
    d = f"{base}/{i % n}"
    os.makedirs(d, exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    path = d + "/s.sock"
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s.bind(path)
    s.listen()
    time.sleep(0.003)
    s.close()
    os.unlink(path)
    if folders:
        os.rmdir(d)
    time.sleep(pause)
    i += 1
'''


@pytest.fixture
def churn():
    tag = uuid.uuid4().hex[:8]
    bases = [Path(f"/var/tmp/zapcli-churn-{tag}-{kind}") for kind in ("folders", "files")]
    try:
        for b in bases:
            b.mkdir(parents=True)
    except PermissionError as exc:
        pytest.skip(f"cannot make socket folders under /var/tmp here: {exc}")
    procs = [subprocess.Popen([sys.executable, "-c", CHURN, str(b), flag, CHURNERS, PAUSE])
             for b, flag in zip(bases, ("1", "0"), strict=True)]
    deadline = time.monotonic() + 10
    while not all(Path(f"{b}.up").exists() for b in bases) and time.monotonic() < deadline:
        time.sleep(0.02)
    yield bases
    for b in bases:
        Path(f"{b}.up").unlink(missing_ok=True)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for b in bases:
        subprocess.run(["rm", "-rf", str(b)], check=False)


@pytest.mark.timeout(240)
def test_sandboxed_shells_start_while_sockets_come_and_go(zap: Zap, churn):
    sids = []
    for i in range(16):
        res = zap("spawn", "--cli", "sh", "--sandbox", "--", f"echo ran-{i}")
        assert res.returncode == 0, res.err
        sids.append(res.out.strip())
    zap("wait", *sids, "--timeout", "120")
    ran = {}
    for i, sid in enumerate(sids):
        out = zap("output", sid).out.strip()
        if out != f"ran-{i}":
            doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
            out = (out, zap("output", "--stderr", sid).out.strip(), doc["status"], doc.get("reason"))
        ran[sid] = out
    failed = {sid: said for sid, said in ran.items() if not isinstance(said, str)}
    assert not failed, f"{len(failed)} of {len(sids)} sandboxes never ran their command: {failed}"


def _repo(cwd: Path) -> None:
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", *args], cwd=cwd,
                       check=True, capture_output=True)


@pytest.mark.timeout(240)
def test_an_attempts_check_starts_while_sockets_come_and_go(zap: Zap, churn):
    """The `attempts` check runs in a sandbox of its own, started for each tree."""
    _repo(zap.cwd)
    res = zap("spawn", "--cli", "sh", "--attempts", "2", "--sandbox", "--", "echo work > w.txt")
    assert res.returncode == 0, res.err
    sids = IDS.findall(res.out)
    zap("wait", *sids, "--timeout", "60")
    passed = 0
    for _ in range(4):
        res = zap("attempts", sids[0], "--check", "test -s w.txt && echo checked")
        passed += res.out.count("check: passed")
    assert passed == 8, res.out + res.err


@pytest.mark.timeout(240)
def test_the_agents_sandbox_starts_while_sockets_come_and_go(box, churn):
    """The built-in agent's `bash` runs in a sandbox started for the run."""
    for i in range(12):
        b = box()
        res = BashTool(b.jobs).run({"command": f"echo ran-{i}"}, b.ctx)
        assert res.content.startswith(f"ran-{i}"), res.content
        b.close()


def test_a_start_made_again_is_still_one_start(box, churn):
    """`Sandbox.starts` counts sandboxes that came up: the starts made again
    after a set-up that failed on a gone socket are not restarts of the
    helper (a full run's test_a_command_cannot_kill_its_helper saw 3, from
    this file's sockets on another worker)."""
    for _ in range(6):
        b = box()
        assert BashTool(b.jobs).run({"command": "echo up"}, b.ctx).content.startswith("up")
        assert b.sandbox.starts == 1
        b.close()
        # its helper ended at its end of file, not by the SIGKILL after the grace: the
        # socket's close alone neither woke the reader thread nor gave the helper its end
        assert b.sandbox.ended == 0, b.sandbox.ended
