"""The create time of a process as every zapcli process counts it: its
start (`/proc/<pid>/stat`, in clock ticks since boot) after this boot's time.
Imports the stdlib and `zapcli.paths` (at the first ask: where the state
folder is). A top-level module: the trail's own claims (`zapcli.trail.finish`) record their
process's identity as the supervisor checks it.

The boot time is the kernel's (`btime` of /proc/stat, as psutil reads it)
as the first zapcli process since the boot read it, kept in the state
folder beside the boot's id (`boot-time`): the kernel's moves with every step
of the wall clock (NTP, a VM resumed, `date -s`), and a create time computed
from a moved one names another process — every running subagent was read as
dead and its trail ended `lost`. Where the file cannot be kept (a state
folder not made yet, or not writable), the kernel's — asked again at the
next call, not kept in memory: a long-lived process (`zapcli top`, `mcp
serve`) started before its state folder existed counts from the folder's
file once there is one, as every other process of the folder does.
"""

from __future__ import annotations

import contextlib
import os

_PROC = "/proc"
_boot: dict[str, float] = {}  # state folder -> the boot time kept there, as this process read it
BOOT_FILE = "boot-time"  # in the state folder: "<the boot's id> <its btime>"


def boot_time() -> float:
    """Epoch seconds of boot, one value for every zapcli process of this
    state folder and this boot: the `btime` line of /proc/stat (as psutil)
    as the first process since the boot read it, kept in the state folder
    beside the boot's id. The kernel's btime moves with every step of the
    wall clock (NTP, a VM resumed, `date -s`), and a create time computed
    from a moved one names another process: each running subagent read as
    dead and its trail was ended `lost`. Where the file cannot be kept (no
    state folder yet, one not writable), the kernel's value — asked again
    next time, so that a long-lived process started before its state folder
    was made counts from then on as the folder's processes do. One process
    working in several state folders (the Python API, a test worker) counts
    each with its own."""
    where = _folder()
    got = _boot.get(where)
    if got is None:
        got, kept = _kept(_kernel_boot_time(), where)
        if kept:
            _boot[where] = got
    return got


_folders: dict[tuple[str | None, ...], str] = {}  # what names the state folder -> the folder


def _folder() -> str:
    """The state folder (`zapcli.paths.state_dir`), remembered for the
    variables that name it: asked for every create time (a fleet view asks
    for each running subagent at every refresh), it is a dictionary look."""
    env = os.environ
    key = (env.get("ZAPCLI_HOME"), env.get("XDG_STATE_HOME"), env.get("HOME"))
    got = _folders.get(key)
    if got is None:
        from zapcli.paths import state_dir

        got = str(state_dir())
        if key[0] is None or os.path.isabs(key[0]):  # a relative one is the current folder's
            _folders[key] = got
    return got


def _kernel_boot_time() -> float:
    with open(f"{_PROC}/stat", "rb") as f:
        for line in f:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise RuntimeError("no btime line in /proc/stat")


def _kept(kernel: float, folder: str) -> tuple[float, bool]:
    """(the boot time kept in `folder` for this boot, True), else
    (`kernel`'s, whether it is kept there from now on)."""
    try:
        with open(f"{_PROC}/sys/kernel/random/boot_id", "rb") as f:
            boot_id = f.read().strip().decode("ascii")
    except (OSError, ValueError):
        return kernel, False
    path = os.path.join(folder, BOOT_FILE)
    try:
        with open(path, "rb") as f:
            said, _, value = f.read(200).decode("ascii").partition(" ")
        if said == boot_id:
            return float(value), True
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
        return kernel, False
    return kernel, True


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (state first,
    then parent, group, ...: `man 5 proc` less its first two), or None when
    it cannot be read. The name may hold anything, ")" and spaces included:
    the fields start after its last ")". os.read, not open(): half the time,
    which counts in a pass over every process."""
    try:
        fd = os.open(f"{_PROC}/{int(pid)}/stat", os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        data = os.read(fd, 4096)  # a stat line is well under 1 KB
    except OSError:
        return None
    finally:
        os.close(fd)
    return data[data.rfind(b")") + 2:].split()


def stat(pid: int) -> tuple[str, float] | None:
    """(state letter, create time in epoch seconds) of `pid`, or None when it
    does not exist (or /proc is unavailable)."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    try:
        ticks = float(fields[19])
        return fields[0].decode("ascii"), ticks / os.sysconf("SC_CLK_TCK") + boot_time()
    except (IndexError, ValueError, RuntimeError):
        return None
