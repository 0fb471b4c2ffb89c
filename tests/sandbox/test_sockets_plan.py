"""`zapcli.sandbox.sockets.plan`: what the sandbox hides with the network
off (tests/redteam/test_sandbox_hardening.py connects to real sockets
through it). Pure but for the real folders it looks at."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

from zapcli.sandbox.sockets import plan


def test_network_on_hides_nothing(tmp_path):
    assert plan(network=True, writable=[str(tmp_path)], scratch="", hidden=(), declared=()) \
        .hide == ()


def test_network_off_hides_tmp_and_the_runtime_folder_but_not_the_workspace(tmp_path):
    runtime = tmp_path / "rt"
    runtime.mkdir()
    got = plan(network=False, writable=["/tmp"], scratch="", hidden=(), declared=(),
               runtime=str(runtime))
    assert "/tmp" not in got.hide  # the workspace is /tmp itself: it is the agent's
    got = plan(network=False, writable=[str(tmp_path / "ws")], scratch="", hidden=(), declared=(),
               runtime="/run/user/12345-not-there")
    assert "/tmp" in got.hide and "/run/user/12345-not-there" not in got.hide


def test_a_listening_socket_elsewhere_is_masked_unless_declared_or_in_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    other = Path(tempfile.mkdtemp(prefix="zapcli-plan-", dir="/var/tmp"))  # not under /tmp
    socks = []
    try:
        for path in (ws / "own.sock", other / "daemon.sock"):
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(path))
            s.listen()
            socks.append(s)
        got = plan(network=False, writable=[str(ws)], scratch="", hidden=(), declared=())
        assert "/tmp" in got.hide  # the workspace's own socket is bound back with it
        assert str(other / "daemon.sock") in got.mask and str(ws / "own.sock") not in got.mask
        kept = plan(network=False, writable=[str(ws)], scratch="", hidden=(),
                    declared=[str(other)])
        assert str(other / "daemon.sock") not in kept.mask
    finally:
        for s in socks:
            s.close()
        shutil.rmtree(other, ignore_errors=True)
