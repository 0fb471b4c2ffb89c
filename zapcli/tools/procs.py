"""Processes the model starts: capped output capture, process-group kill, background jobs.
Imports: stdlib, psutil, `zapcli.sandbox.inner` (the one process-group check).

Every command runs as `bash -c` in a new session, so its whole tree is one
process group that can be killed at once (TERM, then KILL after a grace).
With a sandbox (`zapcli.sandbox.session.Sandbox`, handed in by the caller)
the command starts inside it instead, and its group is signalled and
checked through the sandbox: its pids are not this namespace's.
Background jobs live in a `JobRegistry` owned by one toolset; the registries
still alive at interpreter exit stop their jobs, so none outlives its loop.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import psutil

BASH = shutil.which("bash") or "/bin/bash"
KILL_GRACE_S = 2.0
OUTPUT_KEEP = 30_000  # bytes kept of a command's output: half head, half tail


class CappedOutput:
    """Thread-safe sink keeping the first and last bytes of a stream and a count."""

    def __init__(self, keep: int = OUTPUT_KEEP):
        self._head_cap = keep // 2
        self._tail_cap = keep - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            room = self._head_cap - len(self._head)
            if room > 0:
                self._head += data[:room]
                data = data[room:]
            if data:
                self._tail += data
                if len(self._tail) > self._tail_cap:
                    del self._tail[: len(self._tail) - self._tail_cap]

    def text(self) -> str:
        with self._lock:
            head = self._head.decode("utf-8", errors="replace")
            tail = self._tail.decode("utf-8", errors="replace")
            folded = self.total - len(self._head) - len(self._tail)
        if folded <= 0:
            return head + tail
        return f"{head}\n… [{folded:,} bytes folded] …\n{tail}"


def _pump(fd: int, sink: CappedOutput, stop: threading.Event) -> None:
    """Copy a pipe into `sink` until EOF or `stop`; polls so `stop` is honoured
    even while a leftover grandchild keeps the pipe open."""
    try:
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            sink.feed(chunk)
    except OSError:
        return
    finally:
        os.close(fd)


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in process group `pgid`: the
    sandbox helper's /proc scan (one implementation, inside and out), or
    psutil where there is no /proc."""
    from zapcli.sandbox.inner import group_alive as scan

    try:
        return scan(pgid)
    except OSError:
        pass
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except (OSError, psutil.Error):
            continue
    return False


def _signal(pgid: int, sig: int, proc: Any) -> None:
    if hasattr(proc, "signal_group"):  # in a sandbox: its pids are not ours
        proc.signal_group(sig)
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def alive(pgid: int, proc: Any = None) -> bool:
    """`group_alive`, through the sandbox for a sandboxed command."""
    return proc.group_alive() if hasattr(proc, "group_alive") else group_alive(pgid)


def kill_group(pgid: int, proc: Any = None, grace_s: float = KILL_GRACE_S) -> None:
    """TERM the group, KILL it after `grace_s`. A group already gone is success."""
    _signal(pgid, signal.SIGTERM, proc)
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        if proc is not None:
            proc.poll()  # reap the leader so it stops counting as alive
        if not alive(pgid, proc):
            break
        time.sleep(0.05)
    else:
        _signal(pgid, signal.SIGKILL, proc)
    if proc is not None:  # its exit status too (a sandbox's helper reports it a moment later)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass


def start(command: str, cwd: str, env: dict[str, str],
          sandbox: Any = None) -> tuple[Any, CappedOutput, threading.Thread, threading.Event]:
    """Start `bash -c command` in a new session (in `sandbox` when given),
    stdout+stderr merged into a capped sink. Raises OSError."""
    read_fd, write_fd = os.pipe()
    try:
        if sandbox is not None:
            proc = sandbox.run([BASH, "-c", command], cwd, env, write_fd)
        else:
            proc = subprocess.Popen([BASH, "-c", command], cwd=cwd, env=env,
                                    stdin=subprocess.DEVNULL, stdout=write_fd,
                                    stderr=write_fd, start_new_session=True, close_fds=True)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    if sandbox is None:  # a sandbox is recorded once, when it starts
        from zapcli import children

        children.started(proc.pid, "bash")
    sink = CappedOutput()
    stop = threading.Event()
    reader = threading.Thread(target=_pump, args=(read_fd, sink, stop), daemon=True,
                              name=f"zapcli-bash-{proc.pid}")
    reader.start()
    return proc, sink, reader, stop


@dataclass
class ForegroundResult:
    output: str
    exit_code: int | None
    timed_out: bool
    lingering: bool  # the command left processes holding its output open
    total_bytes: int
    lost: bool = False  # its sandbox ended under it (the helper died)


def run_foreground(command: str, cwd: str, env: dict[str, str],
                   timeout_s: float, sandbox: Any = None) -> ForegroundResult:
    proc, sink, reader, stop = start(command, cwd, env, sandbox)
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid, proc)
    except BaseException:
        kill_group(proc.pid, proc)
        raise
    reader.join(timeout=1.0)
    lingering = reader.is_alive()
    stop.set()
    reader.join(timeout=1.0)
    return ForegroundResult(sink.text(), proc.returncode, timed_out, lingering, sink.total,
                            lost=bool(getattr(proc, "lost", False)))


@dataclass
class Job:
    """One background command."""

    job_id: str
    command: str
    proc: Any  # a Popen, or a sandbox's SandboxedProcess
    output: CappedOutput
    reader: threading.Thread
    stop_reading: threading.Event
    started: float = field(default_factory=time.monotonic)
    timed_out: bool = False
    stopped: bool = False

    @property
    def done(self) -> bool:
        return self.proc.poll() is not None

    @property
    def exit_code(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout_s: float) -> bool:
        try:
            self.proc.wait(timeout=max(0.0, timeout_s))
        except subprocess.TimeoutExpired:
            return False
        self.reader.join(timeout=0.5)  # let the last output land
        return True

    def stop(self) -> None:
        self.stopped = not self.done
        kill_group(self.proc.pid, self.proc)
        self.reader.join(timeout=0.5)
        self.stop_reading.set()


_LIVE: weakref.WeakSet[JobRegistry] = weakref.WeakSet()


class JobRegistry:
    """The background jobs of one toolset. Not shared between loops."""

    def __init__(self, max_running: int = 16):
        self.max_running = max_running
        self._jobs: dict[str, Job] = {}
        self._next = 1
        self._lock = threading.Lock()
        _LIVE.add(self)

    def start(self, command: str, cwd: str, env: dict[str, str],
              timeout_s: float | None, sandbox: Any = None) -> Job:
        with self._lock:
            running = sum(1 for j in self._jobs.values() if not j.done)
            if running >= self.max_running:
                raise RuntimeError(f"{running} background jobs are already running (limit "
                                   f"{self.max_running}); stop one with task_stop first")
            job_id = f"job_{self._next}"
            self._next += 1
            proc, sink, reader, stop = start(command, cwd, env, sandbox)
            job = Job(job_id, command, proc, sink, reader, stop)
            self._jobs[job_id] = job
        if timeout_s is not None:
            threading.Thread(target=self._watchdog, args=(job, timeout_s), daemon=True,
                             name=f"zapcli-watchdog-{job_id}").start()
        return job

    @staticmethod
    def _watchdog(job: Job, timeout_s: float) -> None:
        if not job.wait(timeout_s):
            job.timed_out = True
            kill_group(job.proc.pid, job.proc)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id.strip())

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def close(self) -> None:
        """Stop every job still running (the loop is over)."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            if not job.done or alive(job.proc.pid, job.proc):
                job.stop()
            job.stop_reading.set()


@atexit.register
def _stop_all_jobs() -> None:
    for registry in list(_LIVE):
        registry.close()
