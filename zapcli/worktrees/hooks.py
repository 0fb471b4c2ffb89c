"""A shell command run in a tree, its output kept (the tail, bounded):
`worktree.setup` and `worktree.teardown` (the user's config.yaml only), and
the `attempts` check (in the sandbox its caller's prefix builds, with the
environment its caller gives: `zapcli.ops.attempts`).

Imports only the standard library. The command runs in a session of its
own, stdin `/dev/null`, stdout and stderr into one temporary file (any
amount of output, never a full pipe); at its time limit, or when `stop()`
says so, its whole group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence

from zapcli.plain import plain

OUTPUT_KEPT = 8 * 1024  # bytes of its output kept (the end)
TEARDOWN_TIMEOUT_S = 120.0


@plain
class HookRun:
    command: str
    exit_code: int | None  # None: killed (timeout or stopped)
    output: str  # the last OUTPUT_KEPT bytes, decoded
    output_bytes: int
    ms: int
    why: str = ""  # "timeout" | "stopped" when killed

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def failure(self) -> str:
        """What went wrong, in words, with its last line of output."""
        what = {"timeout": "was killed at its time limit", "stopped": "was stopped"}.get(
            self.why, f"exited with code {self.exit_code}")
        last = next((x for x in reversed(self.output.splitlines()) if x.strip()), "")
        return what + (f": {last.strip()[:300]}" if last else " (no output)")

    def to_dict(self) -> dict[str, object]:
        return {"command": self.command, "exit_code": self.exit_code, "ok": self.ok,
                "output": self.output, "output_bytes": self.output_bytes, "ms": self.ms,
                "why": self.why or None}


def run(command: str, cwd: str, env: Mapping[str, str], timeout_s: float,
        stop: Callable[[], bool] = lambda: False, prefix: Sequence[str] = ()) -> HookRun:
    """Run `command` with `/bin/sh -c` in `cwd` to its end, its time limit or
    `stop()`; after `prefix` (a sandbox's command line, ending in `--`) if given."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([*prefix, "/bin/sh", "-c", command], cwd=cwd, env=dict(env), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
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
