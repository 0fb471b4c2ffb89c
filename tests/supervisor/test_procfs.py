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


def test_create_time_is_psutils_counted_from_the_boot_time_kept():
    """A create time is the process's start after the boot, as psutil counts
    it; the boot time is the one the state folder keeps (equal to psutil's
    where the clock never stepped: tests/supervisor/test_boottime.py)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        for pid in (os.getpid(), child.pid, os.getppid()):
            state, ctime = procfs.stat(pid)
            after_boot = psutil.Process(pid).create_time() - psutil.boot_time()
            assert ctime - procfs.boot_time() == pytest.approx(after_boot, abs=1e-6)
        ctime = procfs.stat(child.pid)[1]
        assert liveness.is_alive(child.pid, ctime)
        assert not liveness.is_alive(child.pid, ctime - 5)  # a reused pid
    finally:
        child.kill()
        child.wait()


def test_a_zombie_is_dead_and_a_gone_pid_is_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    ctime = procfs.stat(child.pid)[1]
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


def test_others_in_tree_sees_what_the_sweep_would_find():
    """The check that spares a shell subagent's runner the whole sweep at its
    end (`kill_tree(include_root=False)`): a child, a child in a session of
    its own, a group member that is nobody's child, each counts; zombies and
    an empty tree do not. Run in a process that leads its own group, as a
    runner does."""
    probe = """
import os, subprocess, sys, time
from zapcli.supervisor.procfs import others_in_tree
os.setpgid(0, 0)
me = os.getpid()
out = [others_in_tree(me)]
kid = subprocess.Popen(["sleep", "30"])
out.append(others_in_tree(me)); kid.kill(); kid.wait()
out.append(others_in_tree(me))
own = subprocess.Popen(["sleep", "30"], start_new_session=True)
out.append(others_in_tree(me)); own.kill(); own.wait()
subprocess.run(["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > " + sys.argv[1]])
orphan = int(open(sys.argv[1]).read())  # re-parented away, still in our group
out.append(others_in_tree(me)); os.kill(orphan, 9)
end = time.monotonic() + 10
while others_in_tree(me) and time.monotonic() < end:
    time.sleep(0.02)
zombie = subprocess.Popen(["true"])
while open(f"/proc/{zombie.pid}/stat").read().split(") ")[1][0] != "Z":
    time.sleep(0.01)
out.append(others_in_tree(me))
zombie.wait()
print(out)
"""
    import tempfile

    with tempfile.NamedTemporaryFile() as f:
        res = subprocess.run([sys.executable, "-c", probe, f.name], capture_output=True, text=True,
                             timeout=60)
    assert res.stdout.strip() == "[False, True, False, True, True, False]", res.stderr


def test_the_tree_a_kill_ends_is_psutils_walk_in_one_pass(tmp_path):
    """`procfs.tree` (one reading of every /proc/<pid>/stat) finds what
    psutil's walk finds (`kill._walked`): the root, its child and grandchild,
    a descendant that left for a session of its own, a group member that is
    nobody's descendant (its parent exited); not an unrelated process, nor
    this one."""
    from zapcli.supervisor import kill

    pids, orphan = tmp_path / "pids", tmp_path / "orphan"
    script = (f"sleep 60 & echo $! >> {pids}; "
              f"sh -c 'sleep 60 & echo $! >> {pids}; wait' & echo $! >> {pids}; "
              f"setsid sleep 60 & echo $! >> {pids}; "
              f"sh -c 'sleep 60 >/dev/null 2>&1 & echo $! > {orphan}'; wait")
    root = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 4
                   and orphan.exists() and orphan.read_text().strip() != "", timeout=10)
        member = int(orphan.read_text())
        wait_until(lambda: psutil.Process(member).ppid() != root.pid, timeout=10)
        want = {root.pid, member, *map(int, pids.read_text().split())}
        found = procfs.tree([root.pid], root.pid)
        assert found == want
        assert set(kill._walked([psutil.Process(root.pid)], root.pid, os.getpid())) == want
        assert stranger.pid not in found and os.getpid() not in found
        assert set(kill._collect([psutil.Process(root.pid)], root.pid, root.pid)) == want - {root.pid}
    finally:
        for pid in procfs.tree([root.pid], root.pid) or ():
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        stranger.kill()
        root.wait()
        stranger.wait()
