"""Process identity on the hot path, read from /proc the way psutil reads it.

Imports the stdlib and `zapcli.boottime` (the create time of a pid, with the
boot time every zapcli process of a boot shares). `spawn`, `poll` and `list`
need only two facts
about a recorded pid — its create time and whether it is a zombie — and
importing psutil for them costs ~9 ms, more than the rest of a `spawn`
(measured: tests/bench/bench_cli.py). On Linux these functions compute the
values exactly as psutil does (`starttime / SC_CLK_TCK + btime`, the state
letter of /proc/<pid>/stat), which tests/supervisor/test_procfs.py checks
against psutil itself; elsewhere they return None and callers use psutil.
But for the boot time itself: the kernel's moves with every step of the
wall clock, and zapcli keeps the one it first read since the boot.
"""

from __future__ import annotations

import os

from zapcli import boottime

_PROC = "/proc"
boot_time = boottime.boot_time  # the one this boot's zapcli processes share (`zapcli.boottime`)
stat = boottime.stat  # (state letter, create time) of a pid, or None


def available() -> bool:
    return os.path.exists(f"{_PROC}/self/stat")


def parent(pid: int) -> int | None:
    """The parent pid of `pid` (0 when its parent lies outside this PID
    namespace), or None when it does not exist or /proc is unavailable."""
    fields = boottime.stat_fields(pid)
    try:
        return None if fields is None else int(fields[1])
    except (ValueError, IndexError):
        return None


def pid_namespace() -> int | None:
    """This process's pid namespace (the inode of /proc/self/ns/pid), or None
    where it cannot be read. A pid recorded in another namespace (a spawn in
    a container sharing the state folder) names a different process here."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def with_environ_entry(entry: bytes) -> list[int] | None:
    """Pids whose environment holds `entry` (`NAME=value`, exactly), read as
    the raw /proc/<pid>/environ bytes: building every process's environment
    as psutil does took 70-170 ms on a busy machine, at every agent CLI
    subagent's end. None where /proc is not there (callers use psutil).
    Processes of other users (unreadable) and zombies (empty) never match."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    found = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/environ", "rb") as f:
                data = f.read()
        except OSError:
            continue
        if entry in data and entry in data.split(b"\0"):
            found.append(int(name))
    return found




def tree(roots: list[int], pgid: int) -> set[int] | None:
    """The pids a tree's kill ends: `roots`, every member of process group
    `pgid`, and all their descendants — from one reading of each
    /proc/<pid>/stat (parent, group and start of every process at once).
    psutil's walk reads them all again for each process asked (`children`)
    and once more to list the group: seven passes over every process on the
    machine for one `kill`. As psutil's, a child started before its parent
    is not its child (the parent's pid was reused). Zombies are in it
    (gone: the caller tells them). None where /proc is not there."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    parent_of: dict[int, int] = {}
    started: dict[int, int] = {}
    todo = []
    for name in names:
        if not name.isdigit():
            continue
        fields = boottime.stat_fields(name)
        if fields is None:
            continue  # gone meanwhile
        try:
            pid, ppid, group, ticks = int(name), int(fields[1]), int(fields[2]), int(fields[19])
        except (ValueError, IndexError):
            continue
        parent_of[pid], started[pid] = ppid, ticks
        if group == pgid:
            todo.append(pid)
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    todo += [pid for pid in roots if pid in parent_of]
    found: set[int] = set()
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += [kid for kid in children.get(pid, ()) if started[kid] >= started[pid]]
    return found


def _children(pid: int, tries: int = 3) -> set[int] | None:
    """The children of every thread of `pid`, or None when they cannot be
    read. A thread that ends between the listing and the read (the output
    pumps do, as a command ends) hands its children to another thread, so
    the whole listing is read again rather than giving up."""
    for _ in range(tries):
        kids: set[int] = set()
        try:
            for task in os.listdir(f"{_PROC}/{int(pid)}/task"):
                with open(f"{_PROC}/{int(pid)}/task/{task}/children", "rb") as f:
                    kids.update(int(k) for k in f.read().split())
            return kids
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread ended meanwhile
        except (OSError, ValueError):
            return None
    return None


def others_in_tree(pid: int) -> bool | None:
    """Whether any live process other than `pid` is in its process group or
    is its child: what `kill.kill_tree(pid, include_root=False)` would find
    (a descendant is a child's descendant, and a child is seen here). Its
    children from /proc/<pid>/task/*/children, the group by `getpgid` (a
    system call a pid, no file read): well under psutil's walk, which took
    ~50 ms on a busy machine at every shell subagent's end. Zombies are gone
    already. None where that cannot be told (callers sweep anyway)."""
    kids = _children(pid)
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    if kids is None:
        return None
    for name in names:
        if not name.isdigit() or int(name) == pid:
            continue
        n = int(name)
        try:
            if n not in kids and os.getpgid(n) != pid:
                continue
        except OSError:  # gone meanwhile
            continue
        got = stat(n)
        if got is not None and got[0] != "Z":
            return True
    return False
