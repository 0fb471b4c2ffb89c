"""The create time of a process as every zapcli process counts it: its
start (`/proc/<pid>/stat`, in clock ticks since boot) after this boot's time.
Imports the stdlib; `zapcli.paths` once, at the first ask. A top-level
module: the trail's own claims (`zapcli.trail.finish`) record their
process's identity as the supervisor checks it.

The boot time is the kernel's (`btime` of /proc/stat, as psutil reads it)
as the first zapcli process since the boot read it, kept in the state
folder beside the boot's id (`boot-time`): the kernel's moves with every step
of the wall clock (NTP, a VM resumed, `date -s`), and a create time computed
from a moved one names another process — every running subagent was read as
dead and its trail ended `lost`. Where the file cannot be kept (a state
folder not made yet, or not writable), the kernel's, as before.
"""

from __future__ import annotations

import contextlib
import os

_PROC = "/proc"
_boot: float | None = None
BOOT_FILE = "boot-time"  # in the state folder: "<the boot's id> <its btime>"


def boot_time() -> float:
    """Epoch seconds of boot, one value for every zapcli process of this
    state folder and this boot: the `btime` line of /proc/stat (as psutil)
    as the first process since the boot read it, kept in the state folder
    beside the boot's id. The kernel's btime moves with every step of the
    wall clock (NTP, a VM resumed, `date -s`), and a create time computed
    from a moved one names another process: each running subagent read as
    dead and its trail was ended `lost`. Where the file cannot be kept (a
    folder not writable), the kernel's value, as before."""
    global _boot
    if _boot is None:
        _boot = _kept(_kernel_boot_time())
    return _boot


def _kernel_boot_time() -> float:
    with open(f"{_PROC}/stat", "rb") as f:
        for line in f:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise RuntimeError("no btime line in /proc/stat")


def _kept(kernel: float) -> float:
    """The boot time kept for this boot, else `kernel`'s, kept from now on."""
    try:
        with open(f"{_PROC}/sys/kernel/random/boot_id", "rb") as f:
            boot_id = f.read().strip().decode("ascii")
        from zapcli.paths import state_dir

        path = os.path.join(state_dir(), BOOT_FILE)
    except (OSError, ValueError):
        return kernel
    try:
        with open(path, "rb") as f:
            said, _, value = f.read(200).decode("ascii").partition(" ")
        if said == boot_id:
            return float(value)
    except (OSError, ValueError):
        pass  # none yet, another boot's, or damaged: this one's is kept below
    tmp = f"{path}.{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, f"{boot_id} {kernel!r}".encode("ascii"))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:  # a state folder not made yet, or not writable: the kernel's, as it is
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return kernel


def stat(pid: int) -> tuple[str, float] | None:
    """(state letter, create time in epoch seconds) of `pid`, or None when it
    does not exist (or /proc is unavailable)."""
    try:
        with open(f"{_PROC}/{int(pid)}/stat", "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return None
    fields = data[data.rfind(b")") + 2:].split()
    try:
        ticks = float(fields[19])
        return fields[0].decode("ascii"), ticks / os.sysconf("SC_CLK_TCK") + boot_time()
    except (IndexError, ValueError, RuntimeError):
        return None
