"""A subagent's command that keeps forking anew (each parent exits at once),
ignoring SIGTERM, so that its pid changes faster than a tree can be read and
signalled pid by pid (an adversary's finding). `zapcli kill` must leave none
of it running: after the grace, whatever is still in the subagent's process
group is killed as a group, at one moment. What is asserted is the outside
effect: no process of it left, by its marker in `ps`."""

from __future__ import annotations

import sys
import time

import psutil

from tests.conftest import sleep_marker, wait_until

HOP = r'''
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    if os.fork():
        os._exit(0)  # the parent goes: the work lives on under a new pid
os.execvp("sleep", ["sleep", sys.argv[2]])
'''


def _left(marker: str) -> list[int]:
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if marker in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p.pid)
    return found


def test_a_command_that_hops_from_pid_to_pid_does_not_outlive_kill(zap, tmp_path):
    hop = tmp_path / "hop.py"
    hop.write_text(HOP)
    settled, waiting = str(sleep_marker(4101)), str(sleep_marker(4102))
    sid = zap.spawn_sh(f"{sys.executable} {hop} 4 {settled} & sleep {waiting}")
    wait_until(lambda: zap.status(sid) == "running", 15)
    time.sleep(1.0)  # it hops
    assert zap("kill", "--grace", "1", sid).returncode == 0
    time.sleep(5)  # past the hopping: whatever survived has settled into its `sleep`
    assert _left(settled) == [] and _left(str(hop)) == [] and _left(waiting) == []
