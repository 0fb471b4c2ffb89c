"""A shell command run in a tree, its output kept (the tail, bounded):
`worktree.setup` and `worktree.teardown` (the user's config.yaml only), and
the `attempts` check — each in the sandbox its caller's starts build when it
runs on agent work's files (the check: `zapcli.ops.attempts`; a teardown, a
continued tree's setup: `zapcli.backends.sandboxed.tree_box`), with the
environment its caller gives.

Imports only the standard library. The command runs in a session of its
own, stdin `/dev/null` (in a sandbox, first its shell's word that bwrap set
it up: a start whose set-up failed on a socket gone meanwhile is made again), stdout and stderr into one temporary file (any
amount of output, never a full pipe); at its time limit, or when `stop()`
says so, its whole group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping

from zapcli.plain import plain

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Protocol

    class Starts(Protocol):
        """A sandbox's starts (`zapcli.sandbox.bwrap.Starts`; this room does
        not import the sandbox's)."""

        def __call__(self) -> list[str]: ...
        def up(self, fd: int) -> bool: ...
        def again(self, said: str) -> bool: ...

# In a sandbox: first a byte on stdin (bwrap has set it up), then the command, stdin /dev/null.
SET_UP = 'printf . >&0; exec /bin/sh -c "$1" </dev/null'
OUTPUT_KEPT = 8 * 1024  # bytes of its output kept (the end)
TEARDOWN_TIMEOUT_S = 120.0


@plain
class HookRun:
    command: str
    exit_code: int | None  # None: killed (timeout or stopped)
    output: str  # the last OUTPUT_KEPT bytes, decoded
    output_bytes: int
    ms: int
    why: str = ""  # "timeout" | "stopped" when killed; "refused": not run (`output` says why)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def failure(self) -> str:
        """What went wrong, in words, with its last line of output."""
        if self.why == "refused":
            return f"was not run: {self.output}"
        what = {"timeout": "was killed at its time limit", "stopped": "was stopped"}.get(
            self.why, f"exited with code {self.exit_code}")
        last = next((x for x in reversed(self.output.splitlines()) if x.strip()), "")
        return what + (f": {last.strip()[:300]}" if last else " (no output)")

    @classmethod
    def refused(cls, command: str, why: str) -> HookRun:
        """A command that must not run, and why."""
        return cls(command, None, why, 0, 0, "refused")

    def to_dict(self) -> dict[str, object]:
        return {"command": self.command, "exit_code": self.exit_code, "ok": self.ok,
                "output": self.output, "output_bytes": self.output_bytes, "ms": self.ms,
                "why": self.why or None}


def run(command: str, cwd: str, env: Mapping[str, str], timeout_s: float,
        stop: Callable[[], bool] = lambda: False, box: Starts | None = None) -> HookRun:
    """Run `command` with `/bin/sh -c` in `cwd` to its end, its time limit or
    `stop()`; in a sandbox if `box` (its starts, `zapcli.sandbox.bwrap.Starts`:
    the command goes after each one's command line)."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        while True:
            up_r, up_w = os.pipe() if box is not None else (-1, -1)  # it says it is set up
            line = box() if box is not None else []
            shell = [*line, "/bin/sh", "-c", SET_UP, "sh", command] if box else ["/bin/sh", "-c", command]
            try:
                proc = subprocess.Popen(shell, cwd=cwd, env=dict(env), stdout=out,
                                        stderr=subprocess.STDOUT,
                                        stdin=up_w if box else subprocess.DEVNULL,
                                        start_new_session=True, close_fds=True)
            except BaseException:
                if box is not None:
                    os.close(up_r)
                raise
            finally:
                if box is not None:
                    os.close(up_w)
            if box is None or box.up(up_r):
                break
            proc.wait()
            out.seek(0)
            said = out.read().decode("utf-8", "replace")  # bwrap's own words: nothing ran
            if not box.again(said):
                break
            out.seek(0)
            out.truncate()
        why = ""
        while proc.poll() is None:
            if time.monotonic() - started > timeout_s or stop():
                why = "timeout" if not stop() else "stopped"
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
                break
            time.sleep(0.05)
        size = out.seek(0, os.SEEK_END)
        out.seek(max(size - OUTPUT_KEPT, 0))
        text = out.read().decode("utf-8", "replace")
    code = None if why else proc.returncode
    return HookRun(command, code, text, size, int((time.monotonic() - started) * 1000), why)
