"""The /proc fast path must agree exactly with psutil, its reference."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from tests.conftest import wait_until
from zapcli.supervisor import liveness, procfs

pytestmark = pytest.mark.skipif(not procfs.available(), reason="no /proc on this system")


def test_create_time_and_boot_time_equal_psutil():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        for pid in (os.getpid(), child.pid, os.getppid()):
            state, ctime = procfs.stat(pid)
            assert ctime == psutil.Process(pid).create_time()
        assert procfs.boot_time() == psutil.boot_time()
        assert liveness.is_alive(child.pid, psutil.Process(child.pid).create_time())
        assert not liveness.is_alive(child.pid, psutil.Process(child.pid).create_time() - 5)  # reused pid
    finally:
        child.kill()
        child.wait()


def test_a_zombie_is_dead_and_a_gone_pid_is_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    ctime = psutil.Process(child.pid).create_time()
    wait_until(lambda: procfs.stat(child.pid)[0] == "Z", 10)  # exited, not reaped: a zombie
    assert not liveness.is_alive(child.pid, ctime)
    child.wait()
    assert procfs.stat(child.pid) is None
    assert not liveness.is_alive(child.pid, ctime)


def test_the_marker_scan_agrees_with_psutils_environment():
    """#24.15: the marked processes are found from the raw environ bytes (as
    psutil's dicts found them, a hundred times faster); a value that only
    starts like the marker's, or a name that only ends like it, is not it."""
    sid = f"sa_20260101_{os.getpid():08x}"[-20:]
    env = {**os.environ, "ZAPCLI_SUBAGENT_ID": sid}
    near = [{**os.environ, "ZAPCLI_SUBAGENT_ID": sid + "0"}, {**os.environ, "X_ZAPCLI_SUBAGENT_ID": sid}]
    kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=e)
            for e in (env, *near)]
    try:
        entry = f"ZAPCLI_SUBAGENT_ID={sid}".encode()
        wait_until(lambda: kids[0].pid in (procfs.with_environ_entry(entry) or []), 10)
        fast = procfs.with_environ_entry(entry)
        slow = [p.pid for p in psutil.process_iter()
                if _environ(p).get("ZAPCLI_SUBAGENT_ID") == sid]
        assert fast == slow == [kids[0].pid]
    finally:
        for k in kids:
            k.kill()
            k.wait()


def _environ(proc: psutil.Process) -> dict:
    try:
        return proc.environ()
    except psutil.Error:
        return {}
