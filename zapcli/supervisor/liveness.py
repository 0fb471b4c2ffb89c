"""Is a recorded process still ours and alive? (docs/explanation/rules.md#status step 2.)

Imports `zapcli.supervisor.procfs`; psutil only in `find` (for kill). Identity is pid + create time: a reused pid is not our process.
A zombie is dead, so a child whose parent does not reap it reads as gone at the
first check.
"""

from __future__ import annotations

import os

from zapcli.supervisor import procfs

CREATE_TIME_TOLERANCE_S = 0.05
DEAD_STATES = ("Z", "X", "x")  # zombie, dead


def find(pid: int, create_time: float):  # -> psutil.Process | None
    """The live psutil.Process for (pid, create_time), or None if dead/reused/zombie."""
    import psutil

    if not isinstance(pid, int) or pid <= 0:
        return None
    if procfs.available():  # the create time every zapcli process computes (`procfs.boot_time`)
        if not is_alive(pid, create_time):
            return None
        try:
            return psutil.Process(pid)
        except psutil.Error:
            return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # exists, owned by someone else: identity decides
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - float(create_time)) > CREATE_TIME_TOLERANCE_S:
            return None
        if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return None
        return proc
    except (psutil.Error, TypeError, ValueError):
        return None


def is_alive(pid: object, create_time: object) -> bool:
    """True when the recorded process still runs and is the same process.
    Reads /proc directly where it can (no psutil import on the hot path)."""
    if not isinstance(pid, int) or pid <= 0 or not isinstance(create_time, (int, float)):
        return False
    if procfs.available():
        st = procfs.stat(pid)
        return (st is not None and st[0] not in DEAD_STATES
                and abs(st[1] - float(create_time)) <= CREATE_TIME_TOLERANCE_S)
    return find(pid, create_time) is not None


def boot_time() -> float:
    """When this machine booted (epoch seconds)."""
    if procfs.available():
        return procfs.boot_time()
    import psutil

    return psutil.boot_time()
