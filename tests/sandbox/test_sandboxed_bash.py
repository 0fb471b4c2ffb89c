"""The built-in agent's `bash` in the sandbox, as an attacker would use it:
it cannot write outside its writable roots, cannot reach the network when
the definition says `network: false`, sees no other process, and as root
holds no capability to undo any of that (docs/explanation/rules.md#sandbox). Real bwrap, real
processes, a real 127.0.0.1 listener."""

from __future__ import annotations

import os
import socket
import sys
import threading

import psutil

from tests.conftest import sleep_marker, wait_until
from tests.sandbox.conftest import needs_bwrap
from zapcli.tools.shell import BashTool, TaskOutputTool, TaskStopTool

pytestmark = needs_bwrap


def _listener() -> tuple[socket.socket, int, list[bytes]]:
    """A TCP server on 127.0.0.1 recording what each connection sends."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    got: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                got.append(conn.recv(100))
    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1], got


def test_bash_writes_only_its_roots_and_scratch(box):
    b = box()
    bash = BashTool(b.jobs)
    cmd = (f"touch {b.ws}/made && echo ws-ok; echo x > $TMPDIR/t && echo tmp-ok; "
           f"touch {b.tmp}/outside/x; touch {b.ws}/.git/hook; touch /etc/zapcli-probe; "
           f"ls -A {b.state}; cat {b.state}/mcp/http-1.token; echo $TMPDIR")
    res = bash.run({"command": cmd}, b.ctx)
    assert "ws-ok" in res.content and "tmp-ok" in res.content, res.content
    assert (b.ws / "made").exists()
    # the scratch folder is the sandbox's own tmpfs: there for its next command, not on disk
    assert bash.run({"command": "cat $TMPDIR/t"}, b.ctx).content.startswith("x\n")
    assert not (b.scratch / "t").exists()
    # /tmp is hidden with the network off (its sockets): "outside" is not even there
    assert res.content.count("Read-only file system") == 2, res.content
    assert not (b.tmp / "outside" / "x").exists() and not (b.ws / ".git" / "hook").exists()
    assert "secret-token" not in res.content  # zapcli's own folders are hidden
    assert str(b.scratch) in res.content


def test_network_off_reaches_no_listener_and_on_does(box):
    srv, port, got = _listener()
    with srv:
        probe = f"printf knock > /dev/tcp/127.0.0.1/{port} && echo reached"
        shut = box(network=False)
        res = BashTool(shut.jobs).run({"command": probe}, shut.ctx)
        assert "reached" not in res.content and not got, res.content
        opened = box(network=True)
        res = BashTool(opened.jobs).run({"command": probe}, opened.ctx)
        assert "reached" in res.content, res.content
        wait_until(lambda: got == [b"knock"], 10)


def test_no_other_process_is_visible_and_root_has_no_capability(box):
    b = box(mode="full")
    res = BashTool(b.jobs).run({"command": (
        f"ls /proc | grep -c '^[0-9]'; test -e /proc/{os.getpid()}/environ && echo SEEN-HOST; "
        "grep CapEff /proc/self/status; mount -t tmpfs none /mnt 2>&1 | head -1")}, b.ctx)
    lines = res.content.splitlines()
    assert int(lines[0]) < 10, res.content  # bwrap, the helper, this shell and its pipeline
    assert "SEEN-HOST" not in res.content
    assert "CapEff:\t0000000000000000" in res.content
    assert "mount" in lines[2] and "permission denied" in lines[2].lower(), res.content


def test_background_jobs_timeouts_and_close_end_everything_inside(box):
    b = box()
    one, two, three = (sleep_marker(3300 + i) for i in range(3))
    bash, out, stop = BashTool(b.jobs), TaskOutputTool(b.jobs), TaskStopTool(b.jobs)
    started = bash.run({"command": f"echo up; exec sleep {one}", "background": True}, b.ctx)
    assert started.ok, started.content
    job = b.jobs.get("job_1")
    wait_until(lambda: "up" in out.run({"job_id": "job_1"}, b.ctx).content)
    assert "job_1: done (stopped by task_stop)" in stop.run({"job_id": "job_1"}, b.ctx).content
    assert not job.proc.group_alive() and not _sleepers(one)
    res = bash.run({"command": f"sleep {two}", "timeout_s": 1}, b.ctx)
    assert "timed out after 1s" in res.content
    bash.run({"command": f"(setsid sleep {three} &) ; echo left", "timeout_s": 5}, b.ctx)
    assert _sleepers(three)  # detached from its group, still inside the sandbox
    b.close()  # the sandbox ends: its pid namespace, and all that was left in it
    wait_until(lambda: not _sleepers(two) and not _sleepers(three), 10)


def test_a_command_cannot_kill_its_helper(box):
    """The helper is the sandbox's pid 1: a KILL from inside does not reach
    it (tests/redteam/test_sandbox_hardening.py kills it from outside)."""
    b = box()
    bash = BashTool(b.jobs)
    res = bash.run({"command": "kill -9 $PPID; kill -9 1; echo $PPID"}, b.ctx)
    assert res.content.startswith("1\n"), res.content
    res = bash.run({"command": "echo again"}, b.ctx)
    assert res.ok and "again" in res.content, res.content
    assert b.sandbox.starts == 1


def _sleepers(arg: str) -> list[int]:
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["cmdline"] == ["sleep", arg] and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except psutil.Error:
            continue
    return out


def test_a_zapcli_spawn_inside_says_the_sandbox_hides_zapcli_s_state(box):
    b = box(mode="full")
    b.ctx.env.update(ZAPCLI_HOME=str(b.state), ZAPCLI_CONFIG_HOME=str(b.tmp / "config"))
    res = BashTool(b.jobs).run({"command": f"{sys.executable} -m zapcli spawn --cli sh -- true"},
                               b.ctx)
    assert "inside zapcli's sandbox" in res.content and "subagent tool" in res.content, res.content
    assert "Traceback" not in res.content and not list(b.state.glob("subagents/*.jsonl"))
