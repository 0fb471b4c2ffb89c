"""How `zapcli mcp serve` starts and ends: a stdio client that goes away in the
middle of a blocking `wait` (the server says so in one line, cancels the call
and exits; the subagents keep running), and `--http` that says "serving" only
once it listens, with the real port, and one error line for a port in use."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from tests.mcp.conftest import http_client, run, token_of

CLIENT = """
import os, sys, anyio
from mcp import Client, StdioServerParameters

async def main():
    params = StdioServerParameters(command=sys.executable, args=["-m", "zapcli", "mcp", "serve"],
                                   env=dict(os.environ))
    async with Client(params) as c:
        sid = (await c.call_tool("spawn", {"task": "sleep 60", "cli": "sh"})).structured_content["id"]
        print(sid, flush=True)
        await c.call_tool("wait", {"ids": [sid]})

anyio.run(main)
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_client_gone_mid_wait_ends_the_server_quietly(zap, tmp_path, sig):
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    errlog = tmp_path / "server.err"
    with errlog.open("wb") as err:  # the client's stderr is the server's (stdio_client's errlog)
        client = subprocess.Popen([sys.executable, "-c", CLIENT], env=env, cwd=zap.cwd,
                                  stdout=subprocess.PIPE, stderr=err)
    try:
        sid = client.stdout.readline().decode().strip()  # type: ignore[union-attr]
        assert sid.startswith("sa_"), errlog.read_text()
        servers = psutil.Process(client.pid).children()
        assert len(servers) == 1 and "serve" in servers[0].cmdline()
        server = servers[0]
        time.sleep(2.5)  # the wait is under way: progress notifications go out every second
        client.send_signal(sig)
        client.wait(10)
        gone = time.monotonic()
        server.wait(10)  # psutil.TimeoutExpired if it lives on
        assert time.monotonic() - gone < 5
    finally:
        client.kill()
    said = errlog.read_text()
    assert "Traceback" not in said and "Error" not in said, said
    assert said.count("\n") <= 2 and "the client disconnected" in said, said  # + the connection line
    doc = zap.json("poll", "--no-wait", sid)
    assert doc["subagents"][0].get("status") == "running", doc  # detached: it outlives the server


def _taken_port() -> tuple[socket.socket, int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s, int(s.getsockname()[1])


def test_http_port_0_prints_the_bound_port_once_listening(zap):
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "mcp", "serve", "--http", "0"],
                            env=env, cwd=zap.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline().decode()  # type: ignore[union-attr]
        assert line.startswith("zapcli mcp: serving streamable HTTP on http://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        assert port != 0
        token = token_of(zap, port)
        async def tools() -> list[str]:  # serving already when it says so
            async with http_client(f"http://127.0.0.1:{port}/mcp", token) as c:
                return [t.name for t in (await c.list_tools()).tools]
        assert "spawn" in run(tools)
    finally:
        proc.kill()
        proc.wait(10)


def test_http_port_in_use_is_one_error_line_and_exit_1(zap):
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    holder, port = _taken_port()
    with holder:
        proc = subprocess.run([sys.executable, "-m", "zapcli", "mcp", "serve", "--http", str(port)],
                              env=env, cwd=zap.cwd, capture_output=True, timeout=30)
    err = proc.stderr.decode()
    assert proc.returncode == 1, (proc.returncode, err)
    assert err == f"zapcli: error: cannot listen on 127.0.0.1:{port}: address already in use\n"
