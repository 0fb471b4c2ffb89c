"""kill_tree's waiting: a zombie has ended (C06), so it neither holds a kill
for the whole grace period nor gets "escalated" to SIGKILL (tryout finding:
every `zapcli kill` of a plain `sleep` took the full 3 s grace here, where
init reaps orphans slowly)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from zapcli.supervisor import kill
from zapcli.supervisor.launch import process_create_time


def test_a_zombie_counts_as_gone_at_once():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    proc = psutil.Process(child.pid)
    deadline = time.monotonic() + 10
    while proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.status() == psutil.STATUS_ZOMBIE  # exited, not reaped yet
    assert kill._wait_gone([proc], timeout=30) == []
    assert child.wait(timeout=5) == 0  # the exit status is still there for its reaper


def test_a_live_process_is_still_alive_after_the_timeout():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert [p.pid for p in kill._wait_gone([psutil.Process(child.pid)], timeout=0.2)] == [child.pid]
    finally:
        child.kill()
        child.wait()


def test_kill_tree_of_processes_that_obey_sigterm_sends_no_sigkill():
    # `sh` keeps its `sleep` child; neither traps TERM, both die at once.
    root = subprocess.Popen(["sh", "-c", "sleep 3311 & sleep 3312; wait"], start_new_session=True)
    try:
        time.sleep(0.3)
        report = kill.kill_tree(root.pid, process_create_time(root.pid), grace_s=20)
        assert report.termed and report.killed == []
    finally:
        root.kill()
        root.wait()
