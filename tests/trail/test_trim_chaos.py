"""A trail trim killed (SIGKILL) while it writes its copy (issue 28, the chaos
round): the `.<id>.jsonl.trim-<pid>` it left (~1 MB) is removed by `rm`, by
`gc`, and by the next trim of that trail — never kept forever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import runner_gone
from zapcli.trail import store


def _big_finished(zap) -> tuple[str, Path]:
    sid = zap.spawn_sh("true")
    assert zap("wait", "--timeout", "30", sid).returncode == 0
    runner_gone(zap, sid)  # its collection at exit would trim the trail grown below
    path = zap.trail(sid)
    store.append_records(path, ({"type": "text", "text": "w" * 60000} for _ in range(110)),
                         sync=False)
    assert path.stat().st_size > 6 * 1024 * 1024
    return sid, path


def _killed_trim(zap, path: Path) -> Path:
    """Start a real trim of `path` in a process of its own and SIGKILL it the
    moment its copy appears (the copy is fsynced before the rename: a window
    of milliseconds); the copy it left."""
    code = ("import sys, time; from pathlib import Path; from zapcli.trail import trim\n"
            "import zapcli.trail.store as s\n"
            "real = s.write_all\n"
            "def slow(fd, body):\n"
            "    real(fd, body[: len(body) // 2]); time.sleep(30)\n"  # the chosen moment, held
            "s.write_all = slow\n"
            "trim.trim(Path(sys.argv[1]))\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], env=zap.env)
    copy = path.with_name(f".{path.name}.trim-{proc.pid}")
    end = time.monotonic() + 30
    while not (copy.exists() and copy.stat().st_size > 0):
        assert time.monotonic() < end and proc.poll() is None, "the trim never started its copy"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert copy.exists()
    return copy


def test_rm_removes_what_a_killed_trim_left(zap):
    sid, path = _big_finished(zap)
    copy = _killed_trim(zap, path)
    assert zap("rm", sid).returncode == 0
    assert not copy.exists(), sorted(os.listdir(path.parent))


def test_gc_removes_what_a_killed_trim_left(zap):
    _sid, path = _big_finished(zap)
    copy = _killed_trim(zap, path)
    done = zap("gc")
    assert done.returncode == 0, done.err
    assert not copy.exists(), sorted(os.listdir(path.parent))


def test_the_next_trim_removes_what_a_killed_trim_left(zap):
    from zapcli.trail import trim

    _sid, path = _big_finished(zap)
    copy = _killed_trim(zap, path)
    with store.locked(path):
        assert trim.trim(path) > 0
    assert not copy.exists(), sorted(os.listdir(path.parent))
