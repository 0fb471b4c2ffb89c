"""Kill a whole process tree: TERM (+CONT) now, KILL after the grace period.

Imports psutil, `zapcli.supervisor.liveness` and `.procfs`. The tree is the
root's process group plus every descendant found (including ones that left
the group with setsid), read in one pass over /proc (`procfs.tree`; psutil's
walk where there is none), and again before the SIGKILL so late forks are
caught; a root that leads its own group (a runner) has what is left of its
group killed as a group too, at one moment, so work that hops from pid to
pid faster than it can be read does not outlive it. A process
whose identity no longer matches the record is never signalled; a process
that is already gone counts as success.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

import psutil

from zapcli.supervisor import procfs
from zapcli.supervisor.launch import MARKER, process_create_time
from zapcli.supervisor.liveness import CREATE_TIME_TOLERANCE_S, find


@dataclass
class KillReport:
    """What happened: pids signalled with TERM and pids that needed KILL."""

    termed: list[int] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)
    root_alive: bool = False


def _collect(roots: list[psutil.Process], pgid: int, exclude: int) -> dict[int, psutil.Process]:
    """`roots` (those still running), their descendants, and every member of
    process group `pgid` with theirs; never `exclude` (the caller)."""
    found: dict[int, psutil.Process] = {}
    for root in roots:
        try:
            if root.is_running():
                found[root.pid] = root
        except psutil.Error:
            pass
    pids = procfs.tree(list(found), pgid)
    if pids is None:
        return _walked(list(found.values()), pgid, exclude)
    for pid in pids:
        if pid not in found and pid != exclude:
            try:
                found[pid] = psutil.Process(pid)  # its create time: a reused pid is never signalled
            except psutil.Error:
                continue
    found.pop(exclude, None)
    return found


def _walked(roots: list[psutil.Process], pgid: int, exclude: int) -> dict[int, psutil.Process]:
    """`_collect` through psutil alone, where /proc cannot be read."""
    found: dict[int, psutil.Process] = {root.pid: root for root in roots}
    for root in roots:
        try:
            for child in root.children(recursive=True):
                found.setdefault(child.pid, child)
        except psutil.Error:
            pass
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid:
                found.setdefault(proc.pid, proc)
                for child in proc.children(recursive=True):
                    found.setdefault(child.pid, child)
        except (OSError, psutil.Error):
            continue
    found.pop(exclude, None)
    return found


def _signal(procs: dict[int, psutil.Process], sig: int) -> list[int]:
    hit = []
    for pid, proc in procs.items():
        try:
            proc.send_signal(sig)  # psutil checks the pid was not reused
            hit.append(pid)
        except psutil.Error:
            continue
    return hit


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to `timeout` seconds for `procs` to end; return those still alive.

    A zombie counts as gone (C06): it has exited and only waits to be reaped,
    which a slow init may take seconds to do. psutil.wait_procs would wait for
    the reaping, stretching every kill to the full grace period and then
    "escalating" to a SIGKILL that has nothing left to kill.
    """
    give_up = time.monotonic() + max(timeout, 0)
    alive = list(procs)
    delay = 0.005
    while True:
        alive = [p for p in alive if _running(p)]
        if not alive or time.monotonic() >= give_up:
            return alive
        time.sleep(min(delay, max(give_up - time.monotonic(), 0)))
        delay = min(delay * 2, 0.1)


def _running(proc: psutil.Process) -> bool:
    """Alive and not a zombie (our own children too: their reaper, e.g. a
    Popen.wait, must keep the exit status, so we never reap here)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def freeze_children() -> None:
    """SIGSTOP every descendant of this process, at once: work that must
    stop (a spent budget) makes no further call while its tree is ended
    (`kill_tree` sends CONT with its TERM)."""
    try:
        children = psutil.Process(os.getpid()).children(recursive=True)
    except psutil.Error:
        return
    for child in children:
        try:
            child.send_signal(signal.SIGSTOP)
        except psutil.Error:
            continue


def kill_tree(pid: int, create_time: float, grace_s: float, *, include_root: bool = True) -> KillReport:
    """TERM+CONT the tree of the recorded process, wait `grace_s` seconds, KILL the rest.

    `include_root=False` spares the root itself (a supervisor ending its own
    work); the caller's own pid is always spared.
    """
    report = KillReport()
    root = find(pid, create_time)
    report.root_alive = root is not None
    if root is None:
        return report
    me = os.getpid()
    leads = include_root and _leads_its_group(pid)  # asked while the root is known to be ours
    procs = _collect([root], pid, me)
    if not include_root:
        procs.pop(pid, None)
    report.termed = _signal(procs, signal.SIGTERM)
    _signal(procs, signal.SIGCONT)  # a stopped process must be able to act on TERM
    alive = _wait_gone(list(procs.values()), grace_s)
    # again, for what forked meanwhile: under the root, in the group, under what was found
    again = _collect([root, *procs.values()] if include_root else list(procs.values()), pid, me)
    if not include_root:
        again.pop(pid, None)
    for proc in alive:
        again.setdefault(proc.pid, proc)
    again = {p.pid: p for p in again.values() if _running(p)}  # exited in time: not "killed"
    report.killed = _signal(again, signal.SIGKILL)
    if leads:
        _end_group(pid)
    _wait_gone(list(again.values()), 1)
    return report


def _leads_its_group(pid: int) -> bool:
    """Whether `pid` leads its process group, and we are not in it."""
    try:
        return os.getpgid(pid) == pid and os.getpgid(0) != pid
    except OSError:
        return False


def _live_members(pgid: int) -> bool:
    """Whether a member of process group `pgid` is alive (not a zombie)."""
    found = procfs.tree([], pgid)
    if found is None:
        return True  # cannot tell: the kill answers (ESRCH once none is left)
    for pid in found:
        try:
            if os.getpgid(pid) == pgid and (procfs.stat(pid) or ("Z",))[0] != "Z":
                return True
        except OSError:
            continue
    return False


GROUP_KILL_S = 1.0  # how long `_end_group` goes on while its group still has live members


def _end_group(pgid: int) -> None:
    """SIGKILL what is left of process group `pgid` at once, again until none
    of it lives: a process that forks anew and exits faster than a tree can
    be read and signalled pid by pid stays in its group, and a group's kill
    reaches every member at one moment. Only after the grace, and only for a
    group whose leader was our identity-checked root: the group is its own
    (Linux gives out no pid of a group that still has members)."""
    end = time.monotonic() + GROUP_KILL_S
    while True:
        try:  # first, then look: a look at a hopping process is stale at once
            os.killpg(pgid, signal.SIGKILL)
        except OSError:  # none of it left (ESRCH), or not ours to signal
            return
        time.sleep(0.01)
        if not _live_members(pgid) or time.monotonic() >= end:
            return  # gone, or zombies only (dead: their parents reap them)


def kill_orphans(pgid: int, not_before: float, grace_s: float,
                 leader_ctime: float | None = None) -> KillReport:
    """End what is left of a dead supervisor's work: the members of process
    group `pgid` created no earlier than the supervisor itself (`not_before`,
    epoch seconds). `leader_ctime`: the create time of the group's leader
    (process `pgid`) when it is the dead one we recorded. Linux hands out no
    pid while a group of that id still has members, so a live process that
    holds the id now and is not that leader means our group is gone: the
    group of that id is a stranger's, and nothing is signalled."""
    report = KillReport()
    if leader_ctime is not None and _held_by_another(pgid, leader_ctime):
        return report
    me = os.getpid()
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        try:
            if (proc.pid != me and os.getpgid(proc.pid) == pgid
                    and process_create_time(proc.pid) >= not_before - 0.05):
                found[proc.pid] = proc
                for child in proc.children(recursive=True):
                    found.setdefault(child.pid, child)
        except (OSError, psutil.Error):
            continue
    if not found:
        return report
    report.termed = _signal(found, signal.SIGTERM)
    _signal(found, signal.SIGCONT)
    alive = _wait_gone(list(found.values()), grace_s)
    report.killed = _signal({p.pid: p for p in alive}, signal.SIGKILL)
    return report


def _held_by_another(pid: int, ctime: float) -> bool:
    if procfs.available():
        st = procfs.stat(pid)
        return st is not None and abs(st[1] - ctime) > CREATE_TIME_TOLERANCE_S
    try:
        return abs(psutil.Process(pid).create_time() - ctime) > CREATE_TIME_TOLERANCE_S
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # cannot tell whose it is: leave it alone
        return True


def kill_helpers(helpers: list[dict], grace_s: float) -> int:
    """End what is left of recorded helpers (`helper` records: pid,
    create_time, pgid — MCP servers, commands in their own groups): each
    one's tree while it lives, else what is left of its process group.
    Identity is checked as everywhere (pid + create time; group members no
    older than the helper). Returns how many processes were signalled."""
    hit: set[int] = set()
    for h in helpers:
        pid, ctime, pgid = h.get("pid"), h.get("create_time"), h.get("pgid")
        if not isinstance(pid, int) or not isinstance(ctime, (int, float)):
            continue
        report = kill_tree(pid, float(ctime), grace_s)
        if not report.root_alive and isinstance(pgid, int) and pgid > 1:
            report = kill_orphans(pgid, float(ctime), grace_s,
                                  float(ctime) if pgid == pid else None)
        hit.update(report.termed, report.killed)
    return len(hit)


def marked(sid: str) -> list[int]:
    """Pids of live processes whose environment carries `sid`'s marker (what
    its work started, even re-parented to init in a session of its own)."""
    me = os.getpid()
    fast = procfs.with_environ_entry(f"{MARKER}={sid}".encode())
    if fast is not None:
        return [pid for pid in fast if pid != me]
    found = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(MARKER) == sid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def end_marked(sid: str, grace_s: float) -> list[int]:
    """TERM what still carries the marker, KILL it after `grace_s`."""
    procs = []
    for pid in marked(sid):
        try:
            p = psutil.Process(pid)
            p.terminate()
            procs.append(p)
        except psutil.Error:
            continue
    for p in _wait_gone(procs, grace_s):
        try:
            p.kill()
        except psutil.Error:
            continue
    return [p.pid for p in procs]
