"""A runner SIGKILLed with its group, its pid then reused by a stranger that
leads a process group of its own: the observer that records `lost` must not
end the stranger's group (tryout: `zapcli list` killed an unrelated job; the
"created after the runner" filter picked exactly the stranger)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import unshare_works, wait_until

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _stranger_with_pid(pid: int) -> subprocess.Popen | None:
    """A `sleep` leading its own session and group, with exactly `pid` (set
    through ns_last_pid; another process may take it first: then None)."""
    for _ in range(20):
        try:
            NS_LAST_PID.write_text(str(pid - 1))
        except OSError:
            return None
        proc = subprocess.Popen(["sleep", "305"], start_new_session=True)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


@pytest.mark.timeout(120)
def test_a_stranger_that_reuses_a_dead_runners_pid_is_never_signalled(zap):
    if not os.access(NS_LAST_PID, os.W_OK):
        pytest.skip("needs a writable /proc/sys/kernel/ns_last_pid to reuse a pid on purpose")
    sid = zap.spawn_sh("sleep 50")
    def process_record():
        lines = zap.trail(sid).read_text().splitlines()
        return next((r for r in map(json.loads, lines) if r["type"] == "process"), None)

    record = wait_until(process_record, 20)
    pid = record["pid"]
    os.killpg(pid, signal.SIGKILL)  # the runner and its work die at once (OOM killer, kill -9)
    end = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > end:
            # a zombie nobody reaps (the test runs as a pid namespace's init): its pid stays taken
            pytest.skip("the dead runner is never reaped here, so its pid cannot be reused")
        time.sleep(0.05)
    stranger = _stranger_with_pid(pid)
    if stranger is None:
        pytest.skip("another process took the freed pid first")
    try:
        view = zap.json("poll", "--no-wait", sid)["subagents"][0]
        assert view["status"] == "lost"
        res = zap("kill", sid)
        assert "already lost" in res.out
        time.sleep(0.5)
        assert stranger.poll() is None, "the stranger holding the reused pid was signalled"
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.timeout(120)
def test_a_subagent_spawned_in_another_pid_namespace_is_not_judged_from_here(zap):
    """tryout: a spawn inside a container sharing the state folder recorded its
    namespace's pid; the host's first `list` found that pid "dead", recorded
    `lost` (first terminal wins: the real result was thrown away) and ended a
    host process group of that number."""
    import sys

    if not unshare_works():
        pytest.skip("needs unshare with user+pid namespaces (not permitted on this machine)")
    idfile = zap.cwd / "inner.id"
    script = (f"{sys.executable} -m zapcli spawn --cli sh --timeout 4 -- 'echo inner; sleep 30' "
              f"> {idfile}; sleep 8")
    ns = subprocess.Popen(["unshare", "-Upfr", "--mount-proc", "sh", "-c", script], env=zap.env,
                          cwd=zap.cwd, stdin=subprocess.DEVNULL)
    try:
        sid = wait_until(lambda: idfile.exists() and idfile.read_text().strip(), 30)
        seen = set()
        end = time.monotonic() + 30
        while time.monotonic() < end:
            status = zap.json("poll", "--no-wait", sid)["subagents"][0]["status"]
            seen.add(status)
            if status not in ("queued", "running"):
                break
            time.sleep(0.3)
        assert "lost" not in seen and status == "timeout", seen  # its own runner's answer
    finally:
        ns.wait(timeout=30)
