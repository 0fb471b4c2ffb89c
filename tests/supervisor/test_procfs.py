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
