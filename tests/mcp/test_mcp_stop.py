"""Servers stop cleanly (issue 28 item 6): `mcp serve --http` stopped with
SIGTERM (as systemd, docker and supervisors stop it) exits 143 with no
traceback and removes its token file; a token file a SIGKILLed server left
is removed at the next start; and `mcp serve` leaves no zombie runners
(C39): 0 `<defunct>` children a few seconds after the runners end, over 200
spawns on stdio and on `--http`, driven by the official SDK client."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil
import pytest
from mcp import Client

from tests.conftest import wait_until
from tests.mcp.conftest import http_client, run, server_params, token_of

SPAWNS = 200


def _serve(zap, *args: str) -> tuple[subprocess.Popen, int]:
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "mcp", "serve", "--http", "0", *args],
                            env=env, cwd=zap.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = proc.stderr.readline().decode()  # type: ignore[union-attr]
    assert "serving streamable HTTP on http://127.0.0.1:" in line, line
    return proc, int(line.rsplit(":", 1)[1].split("/")[0])


def test_sigterm_exits_143_quietly_and_removes_the_token_file(zap):
    """On main: exit 1 and a 60-line `SystemExit: 143` exception-group
    traceback (the token file did go)."""
    proc, port = _serve(zap)
    token_file = zap.home / "mcp" / f"http-{port}.token"
    token_of(zap, port)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    said = err.decode()
    assert proc.returncode == 143, (proc.returncode, said)
    assert "Traceback" not in said and "Exception" not in said, said
    assert not token_file.exists()


def test_sigint_exits_130_quietly(zap):
    proc, port = _serve(zap)
    token_of(zap, port)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (proc.returncode, err.decode())
    assert "Traceback" not in err.decode()
    assert not (zap.home / "mcp" / f"http-{port}.token").exists()


def test_a_token_file_left_by_a_sigkilled_server_is_removed_at_the_next_start(zap):
    """On main: the dead server's token stayed readable in the state folder
    for good (every later start kept it)."""
    first, port = _serve(zap)
    stale = zap.home / "mcp" / f"http-{port}.token"
    token_of(zap, port)
    first.kill()
    first.wait(10)
    assert stale.exists()  # SIGKILL: nothing of ours ran
    second, port2 = _serve(zap)
    try:
        token_of(zap, port2)
        assert not stale.exists() or port2 == port
        live = zap.home / "mcp" / f"http-{port2}.token"
        assert live.exists()  # the live server's own stays
        third, port3 = _serve(zap)  # a third start leaves the second's alone
        try:
            token_of(zap, port3)
            assert live.exists()
        finally:
            third.terminate()
            third.wait(30)
    finally:
        second.terminate()
        second.wait(30)


def _zombies(pid: int) -> list[int]:
    try:
        return [c.pid for c in psutil.Process(pid).children()
                if c.status() == psutil.STATUS_ZOMBIE]
    except psutil.Error:
        return []


def _children(pid: int) -> list[int]:
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def _no_zombies_after(server_pid: int, ids: list[str], zap) -> None:
    # one blocking wait (woken by the ends), not a look at all 200 every second
    docs = zap.json("wait", "--timeout", "240", *ids, env={"ZAPCLI_SESSION": "x"}, timeout=300)
    assert all(s["terminal"] for s in docs["subagents"]), [s for s in docs["subagents"] if not s["terminal"]]
    settle = time.monotonic() + 5  # "a few seconds after each runner ends"
    while _zombies(server_pid) and time.monotonic() < settle:
        time.sleep(0.2)
    left = _zombies(server_pid)
    assert not left, f"{len(left)} <defunct> runners of `mcp serve`"  # on main: one per runner


async def _spawn_all(client) -> list[str]:
    ids = []
    for n in range(SPAWNS):
        got = await client.call_tool("spawn", {"task": f"true {n}", "cli": "sh"})
        ids.append(got.structured_content["id"])
    return ids


def _serves(proc: psutil.Process) -> bool:
    """Whether `proc` is the `mcp serve` process (an ended runner not yet
    collected is a zombie, whose command line cannot be read: not it)."""
    try:
        return "serve" in " ".join(proc.cmdline())
    except psutil.Error:
        return False


@pytest.mark.timeout(600)
def test_200_spawns_over_stdio_leave_no_zombie_runners(zap):
    found: dict[str, object] = {}

    async def go() -> None:
        async with Client(server_params(zap)) as c:
            ids = await _spawn_all(c)
            server = [p for p in psutil.Process().children(recursive=True) if _serves(p)][0]
            _no_zombies_after(server.pid, ids, zap)
            found["ok"] = True

    run(go)
    assert found["ok"]


@pytest.mark.timeout(600)
def test_200_spawns_over_http_leave_no_zombie_runners(zap):
    proc, port = _serve(zap)
    token = token_of(zap, port)

    async def go() -> list[str]:
        async with http_client(f"http://127.0.0.1:{port}/mcp", token) as c:
            return await _spawn_all(c)
    try:
        ids = run(go)
        _no_zombies_after(proc.pid, ids, zap)
        time.sleep(0.5)
        assert not _zombies(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.timeout(180)
def test_a_run_leaves_no_zombie_runners(zap, model):
    """C39 for `zapcli run`: the runners its subagent tool started are
    collected as they end, while the run goes on."""
    spawns = [{"name": "subagent", "arguments": {"action": "spawn", "task": f"child {n} reports"}}
              for n in range(6)]
    srv = model([{"match": "fan out", "turns": [
        {"tool_calls": spawns},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 60}}]},
        # the run lives on: its last call is answered once the test has looked
        {"text": "all six are done", "hold": "last answer"}]},
        {"match": "reports", "loop": True, "turns": [{"text": "reported"}]}])
    proc = subprocess.Popen([sys.executable, "-m", "zapcli", "run", "--", "fan out"], cwd=zap.cwd,
                            env=zap.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: len(list(zap.home.glob("subagents/*.jsonl"))) >= 6
                   or proc.poll() is not None, 90)
        ids = [p.stem for p in zap.home.glob("subagents/*.jsonl")]
        assert zap("wait", "--timeout", "90", *ids).returncode == 0
        # A runner exits a moment after its trail says it ended (its end work;
        # seconds under load), then the run collects it: before long the run
        # has no child at all, while it waits for its last answer.
        settle = time.monotonic() + 10
        while _children(proc.pid) and time.monotonic() < settle:
            time.sleep(0.2)
        assert not _zombies(proc.pid), f"{len(_zombies(proc.pid))} <defunct> runners of the run"
        assert not _children(proc.pid), "a runner of the run still runs after its trail ended"
        assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
    finally:
        srv.release("last answer")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
