"""`list` (#12.14): a compact table newest first, `--limit` (default 20,
saying how many more), `--long` for the four-line form, `--watch` live."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
import time

import pytest


def _finished(zap, n: int) -> list[str]:
    """`n` finished sh subagents in this session, made through the store (fast)."""
    import os as _os

    from zapcli.lifecycle import session as sessions
    from zapcli.trail import store

    out = []
    session = zap.env["ZAPCLI_SESSION"]
    for i in range(n):
        from zapcli import ids
        sid = ids.new_id()
        store.create_trail(sid, {"session": session, "cli": "sh", "task": f"task number {i} " + "word " * 40,
                                 "cwd": str(zap.cwd), "workspace": str(zap.cwd), "timeout_s": 60}, [])
        store.append(store.path_for(sid), "process", {"pid": 1, "create_time": 1.0, "mono": 0.0})
        store.append(store.path_for(sid), "status", {"status": "completed", "exit_code": 0, "mono": 1.5})
        sessions.add(session, sid)
        out.append(sid)
    _os.sync()
    return out


def test_compact_table_newest_first_with_a_limit(zap):
    ids = _finished(zap, 25)
    res = zap("list", env={"COLUMNS": "80"})
    lines = res.out.splitlines()
    assert lines[0] == "[SubAgent] 25 subagents in this session, newest 20 shown"
    rows = [x for x in lines if re.match(r"^[0-9a-f]{8}  ", x)]
    assert [r[:8] for r in rows] == [s[-8:] for s in reversed(ids)][:20]
    assert all(len(r) <= 80 for r in rows) and rows[0].endswith("…")
    assert re.match(r"^[0-9a-f]{8}  completed 1\.5s  sh +task number 24 word", rows[0])
    assert lines[-1].startswith("… 5 more (--limit N")
    assert zap.json("list")["more"] == 5 and zap.json("list")["count"] == 20
    assert zap.json("list", "--limit", "0")["count"] == 25
    assert zap.json("list", "--limit", "3", "--all")["count"] == 3
    long = zap("list", "--long", "--limit", "2").out
    assert f"{ids[-1]}: completed (took 1.5s, exit 0)" in long and "  Task: task number 24" in long


@pytest.mark.timeout(30)
def test_watch_draws_a_live_table_until_ctrl_c(zap):
    _finished(zap, 2)
    pid, fd = pty.fork()
    if pid == 0:  # the child: zapcli list --watch on a terminal
        os.environ.update({**zap.env, "COLUMNS": "100", "TERM": "xterm"})
        os.environ.pop("NO_COLOR", None)
        os.chdir(zap.cwd)
        os.execv(sys.executable, [sys.executable, "-m", "zapcli", "list", "--watch"])
    seen = b""
    end = time.monotonic() + 15
    while time.monotonic() < end and seen.count(b"updated") < 2:
        try:
            seen += os.read(fd, 4096)
        except OSError:
            break
    os.kill(pid, signal.SIGINT)
    _, status = os.waitpid(pid, 0)
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen).decode(errors="replace")
    assert seen.count(b"updated") >= 2, text  # it redrew
    assert "2 subagents in this session" in text and "task number 1" in text
    assert os.WEXITSTATUS(status) == 0
    assert zap("list", "--watch").returncode == 2  # not a terminal: refused, not a hang


def test_a_status_filter_is_said_with_the_count(zap):
    """`list --all --status running` said `0 subagents across all sessions`,
    as if there were none at all."""
    _finished(zap, 2)
    said = zap("list", "--all", "--status", "running").out
    assert said.splitlines()[0] == "[SubAgent] 0 subagents across all sessions with status running"
    said = zap("list", "--status", "completed").out
    assert said.splitlines()[0] == "[SubAgent] 2 subagents in this session with status completed"


def test_ctrl_c_on_wait_says_the_subagents_keep_running_and_how_to_stop_them(zap):
    """Ctrl-C on `wait` printed only `zapcli: interrupted`: it stops the
    waiting, not the work — said, with the ids and how to stop them; the
    subagent is indeed still running after."""
    from tests.conftest import sleep_marker, wait_until

    sid = zap.spawn_sh(f"sleep {sleep_marker(3501)}")
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "wait", sid], cwd=zap.cwd, env=zap.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: zap.status(sid) == "running", 20)
    time.sleep(1.0)  # inside its wait
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    said = err.decode(errors="replace")
    assert proc.returncode == 130, said
    assert f"1 subagent(s) keep running ({sid})" in said, said
    assert "zapcli kill ID" in said and "Traceback" not in said, said
    assert zap.status(sid) == "running"  # the outside effect: the work goes on
    zap("kill", sid)
