"""A step of the wall clock (NTP, a VM resumed, `date -s`) moves the kernel's
boot time (`btime` of /proc/stat), from which a process's create time is
computed: a create time recorded before the step then named no live process,
so a `poll` ended running subagents `lost`, and a long-lived observer (`zapcli
top`, `mcp serve`) read every subagent started after the step as dead. zapcli
now keeps the boot time the first process of a boot read (`zapcli.boottime`).

The step is made for zapcli's processes only: a `sitecustomize` shim moves
what they read as the kernel's btime by three seconds (stepping the machine's
own clock would move it for every test running beside this one). What is
asserted is the trail and the status other processes read."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import sleep_marker, wait_until
from zapcli import boottime
from zapcli.supervisor import liveness, procfs

pytestmark = pytest.mark.skipif(not procfs.available(), reason="no /proc on this system")

STEP = '''
try:
    from zapcli import boottime
    _kernel = boottime._kernel_boot_time
    boottime._kernel_boot_time = lambda: _kernel() + 3.0
except ImportError:  # before zapcli.boottime: the boot time procfs reads
    from zapcli.supervisor import procfs
    procfs._boot = procfs.boot_time() + 3.0
'''


@pytest.fixture
def stepped(zap, tmp_path):
    """The environment of a zapcli process that reads the kernel's boot time
    three seconds later than this test process did (the clock stepped)."""
    shim = tmp_path / "clock-step"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(STEP)
    zap.home.mkdir(parents=True, exist_ok=True)  # the state folder the boot time is kept in
    boottime._boot.clear()  # this process reads it afresh, for the test's state folder
    boottime.boot_time()  # read before the step, kept for this boot
    yield {"PYTHONPATH": os.pathsep.join((str(shim), zap.env["PYTHONPATH"]))}
    boottime._boot.clear()


def _records(zap, sid: str) -> list[dict]:
    return [json.loads(line) for line in zap.trail(sid).read_text().splitlines()]


def test_a_poll_after_a_clock_step_does_not_end_a_running_subagent(zap, stepped):
    marker = f"sleep {sleep_marker(3811)}"
    sid = zap.spawn_sh(marker)
    wait_until(lambda: zap.status(sid) == "running", 15)
    view = zap.json("poll", "--no-wait", sid, env=stepped)["subagents"][0]
    assert view["status"] == "running", view
    assert [r for r in _records(zap, sid) if r["type"] == "status"] == []
    assert zap("kill", sid).returncode == 0  # and `kill` after the step finds and ends it
    assert zap.wait_status(sid) == "cancelled"


def test_a_long_lived_observer_sees_a_subagent_started_after_a_step_alive(zap, stepped):
    sid = zap("spawn", "--cli", "sh", "--", f"sleep {sleep_marker(3812)}", env=stepped).out.strip()
    wait_until(lambda: any(r["type"] == "start" for r in _records(zap, sid)), 15)
    process = next(r for r in _records(zap, sid) if r["type"] == "process")
    assert liveness.is_alive(process["pid"], process["create_time"])  # this process read it before
    assert zap.status(sid) == "running"
    assert zap("kill", sid).returncode == 0


def test_create_time_and_boot_time_are_the_kernels_where_nothing_stepped(zap):
    """In a state folder of its own, the first boot time kept is the kernel's,
    so create times agree with psutil's (tests/supervisor/test_procfs.py)."""
    import psutil

    zap.home.mkdir(parents=True, exist_ok=True)
    boottime._boot.clear()
    try:
        assert procfs.boot_time() == psutil.boot_time()
        assert (zap.home / boottime.BOOT_FILE).read_text().split()[1] == repr(psutil.boot_time())
        assert procfs.stat(os.getpid())[1] == psutil.Process(os.getpid()).create_time()
    finally:
        boottime._boot.clear()


def _stepped_env(zap, tmp_path) -> dict[str, str]:
    shim = tmp_path / "clock-step"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(STEP)
    return {"PYTHONPATH": os.pathsep.join((str(shim), zap.env["PYTHONPATH"]))}


def _alive_here(zap, sid: str) -> bool:
    wait_until(lambda: any(r["type"] == "start" for r in _records(zap, sid)), 15)
    process = next(r for r in _records(zap, sid) if r["type"] == "process")
    return liveness.is_alive(process["pid"], process["create_time"])


def test_an_observer_that_asked_before_its_state_folder_existed_sees_work_started_after_a_step(
        zap, tmp_path):
    """`zapcli top` (or `mcp serve`) started before any subagent: no state
    folder, nowhere to keep the boot time; the clock steps; the first spawn
    makes the folder and keeps the boot time it reads. The observer counts
    with that one from then on (it had kept the kernel's of before the step,
    and read every subagent as dead: a full run's TUI tests ended them `lost`)."""
    assert not zap.home.exists()
    boottime._boot.clear()
    try:
        boottime.boot_time()  # nowhere to keep it yet
        sid = zap("spawn", "--cli", "sh", "--", f"sleep {sleep_marker(3813)}",
                  env=_stepped_env(zap, tmp_path)).out.strip()
        assert _alive_here(zap, sid)
        assert zap.status(sid) == "running"
        assert zap("kill", sid).returncode == 0
    finally:
        boottime._boot.clear()


def test_a_process_that_works_in_two_state_folders_counts_each_with_its_own(zap, tmp_path,
                                                                           monkeypatch):
    """One process (the Python API, a test worker) reads a first state
    folder's boot time, then works in another whose first process read the
    kernel's after a step: that folder's own counts there."""
    first = tmp_path / "first-state"
    first.mkdir()
    boottime._boot.clear()
    try:
        monkeypatch.setenv("ZAPCLI_HOME", str(first))
        boottime.boot_time()  # kept in the first folder, before the step
        monkeypatch.setenv("ZAPCLI_HOME", str(zap.home))
        sid = zap("spawn", "--cli", "sh", "--", f"sleep {sleep_marker(3814)}",
                  env=_stepped_env(zap, tmp_path)).out.strip()
        assert _alive_here(zap, sid)
        assert zap("kill", sid).returncode == 0
    finally:
        boottime._boot.clear()
