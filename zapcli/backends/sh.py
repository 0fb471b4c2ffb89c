"""The `sh` backend's run (`zapcli.backends.shell.ShBackend`): the task runs
with `/bin/sh`, its output pumped into the capped files, its deadline kept on
a monotonic clock.

Imports `zapcli.supervisor` (`child`: the shell is started with
`posix_spawn`, never `subprocess`), `zapcli.tracecontext`. The task never
travels in argv (no 128 KB argv limit, nothing in `ps`): the shell reads it
from a pipe and evaluates it with stdin `/dev/null`. It starts in its
working directory: the runner moves there first (one `chdir`, no wrapper). The command shares the supervisor's process group,
so `kill` reaches it through the group; at the deadline the supervisor kills
its own tree (TERM+CONT, grace, KILL), sparing only itself.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping

from zapcli import tracecontext
from zapcli.paths import work_env
from zapcli.supervisor import child
from zapcli.supervisor.capture import CappedFile, feed, pump
from zapcli.supervisor.launch import process_create_time
from zapcli.supervisor.procfs import others_in_tree
from zapcli.trail.model import SIGTERM_REASON, Outcome, Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from zapcli.sandbox.bwrap import Starts

PUMP_JOIN_S = 2.0
# Read the whole task from the pipe on stdin, then run it with stdin /dev/null.
BOOTSTRAP = 'eval "$(cat)" </dev/null'
# In a sandbox, first a byte on descriptor 3 (closed then): bwrap has set it up.
SET_UP = "printf . >&3; exec 3>&-; "


def _drain(fd: int) -> bytes:
    """What is left to read on a pipe whose writers have all ended."""
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def kill_tree(pid: int, create_time: float, grace_s: float, *, include_root: bool) -> None:
    """`zapcli.supervisor.kill.kill_tree`, imported (with psutil, ~3 MB and
    ~10 ms) only when something is left to end: a command that exits alone
    never pays for it."""
    from zapcli.supervisor.kill import kill_tree as sweep

    sweep(pid, create_time, grace_s, include_root=include_root)


SETTLE_S = (0.002, 0.005, 0.01)  # looks again after these pauses before a sweep


def _left_over(me: int) -> bool:
    """Whether a process of the command outlived it (a background job): a
    sandbox's own is often still on its way out as bubblewrap ends (its
    init, handed to PID 1 as the namespace closes: gone within a millisecond
    here), so what is found is looked at again after short pauses before
    the sweep is paid for (psutil's import and walk: ~25 ms of CPU, in a
    third to a half of sandboxed runners). None (cannot tell): a sweep."""
    for pause in (0.0, *SETTLE_S):
        if pause:
            time.sleep(pause)
        found = others_in_tree(me)
        if found is not True:
            return found is None
    return True


def _describe(code: int) -> str:
    import signal  # only to name one: its enums cost every shell runner's start

    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    if 128 < code < 128 + 65:  # how a shell reports a child that a signal ended
        try:
            return f"exit code {code} (128 + {signal.Signals(code - 128).name}: killed by a signal)"
        except ValueError:
            pass
    return f"exit code {code}"


def run(task: str, *, cwd: str, out: CappedFile, err: CappedFile, deadline_mono: float,
        grace_s: float, terminated: threading.Event,
        stop_grace: Callable[[], float] | None = None, box: Starts | None = None,
        env: Mapping[str, str] | None = None) -> Outcome:
    """Run `task` to its end, its deadline, or a SIGTERM of the supervisor.

    `grace_s` (seconds) is how long the command may take to end after SIGTERM;
    `stop_grace()`, read when the SIGTERM came, may give another (a `kill --grace`).
    `box`: the sandbox's starts (`zapcli.sandbox.bwrap.Starts`), the shell
    after its command line; `env`: its environment (None: the runner's, the
    spawner's own command's).
    """
    os.chdir(cwd)  # where its command runs (the runner's own place; a tree's, when it has one)
    given = dict(os.environ if env is None else env)
    work = tracecontext.for_work(work_env(dict(given)), "sh")
    # bwrap is zapcli's own program, started here: the caller's PATH and loader
    # variables, handed back to the work, are set inside it, not on bwrap
    own = tracecontext.for_work(given, "sh") if box is not None else work
    inside = [*(a for k, v in work.items() if own.get(k) != v for a in ("--setenv", k, v)),
              *(a for k in own if k not in work for a in ("--unsetenv", k))]
    while True:
        fds = [*os.pipe(), *os.pipe(), *os.pipe()]  # task, stdout, stderr: (read, write) each
        task_r, task_w, out_r, out_w, err_r, err_w = fds
        up_r, up_w = os.pipe() if box is not None else (-1, -1)  # the sandbox says it is set up
        try:
            line = [*box()[:-1], *inside, "--"] if box is not None else []
            proc = child.start([*line, "/bin/sh", "-c", (SET_UP if box else "") + BOOTSTRAP],
                               stdin=task_r, stdout=out_w, stderr=err_w, env=own,
                               fd3=up_w if box else None)
        except BaseException:
            for fd in (*fds, up_r, up_w):
                if fd >= 0:
                    os.close(fd)
            raise
        for fd in (task_r, out_w, err_w, up_w):  # the child's ends
            if fd >= 0:
                os.close(fd)
        if box is None or box.up(up_r):
            break
        proc.wait()
        said = _drain(err_r)  # bwrap's own words: nothing inside ran
        if not box.again(said.decode("utf-8", "replace")):
            err.write(said)
            break
        for fd in (task_w, out_r, err_r):
            os.close(fd)
    feed(task_w, task.encode("utf-8"), "task-feed")
    threads = [pump(out_r, out), pump(err_r, err)]
    me, my_ctime = os.getpid(), process_create_time(os.getpid())
    outcome: Outcome | None = None
    while True:
        remaining = deadline_mono - time.monotonic()
        if remaining <= 0:
            kill_tree(me, my_ctime, grace_s, include_root=False)
            proc.wait()
            outcome = Outcome(Status.TIMEOUT, None, "deadline reached; the command was killed")
            break
        if terminated.is_set():
            # Give the command the same grace the `kill` gives it, then end the tree.
            grace = stop_grace() if stop_grace else grace_s
            if proc.wait(timeout=min(grace, max(remaining, 0))) is None:
                kill_tree(me, my_ctime, grace, include_root=False)
                proc.wait()
            outcome = Outcome(Status.CANCELLED, proc.returncode,
                              f"{SIGTERM_REASON}; the command "
                              + ("then exited" if (proc.returncode or 0) >= 0 else "was ended"))
            break
        code = proc.wait(timeout=min(remaining, 0.2))
        if code is None:
            continue
        outcome = Outcome(Status.COMPLETED, 0, None) if code == 0 else Outcome(Status.FAILED, code, _describe(code))
        break
    # Leftover background jobs of the command would hold the pipes open forever.
    if _left_over(me):  # the usual end leaves none: no sweep to pay for
        kill_tree(me, my_ctime, min(grace_s, 1.0), include_root=False)
    for t in threads:
        t.join(timeout=PUMP_JOIN_S)
    return outcome
