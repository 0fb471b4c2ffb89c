"""Issue 18, tested as an attacker would (docs/explanation/rules.md#sandbox).

- Another local user against `zapcli mcp serve --http` gets 401 and starts
  nothing; it cannot read the token file, nor open the `--socket`.
- A scripted model whose bash sweeps /proc/*/environ and /proc/*/mem of
  every process it can see, and returns what it finds base64-encoded (so no
  masking catches it), gets no key from any zapcli process: as root and as
  a normal user, from `zapcli run --approval full` and from an agent spawned
  through `zapcli mcp serve` started with a key in its environment. In the
  sandbox it sees no zapcli process at all; without it (a tool of the same
  user), zapcli's processes are non-dumpable and their environment blocks
  hold no key.

Each sweep also finds a canary planted in its own environment: a sweep that
reads nothing would pass for the wrong reason.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.conftest import wait_until
from tests.mcp.conftest import http_client, server_params, token_of
from tests.redteam.harness import Keys, User, _as, as_root, needs_setpriv
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing import ScriptedServer


def _sweep_result(srv: ScriptedServer, task: str) -> tuple[int, set[str]]:
    """(pids seen, key-like values found) from the tool result the model got."""
    for req in srv.requests:
        body = json.dumps(req)
        if task not in body or "FOUND" not in body:
            continue
        m = re.search(r"PIDS (\d+) MEMS \d+ FOUND ([A-Za-z0-9+/=]*)", body)
        if m:
            return int(m.group(1)), set(base64.b64decode(m.group(2)).decode().split("\n")) - {""}
    raise AssertionError(f"no sweep result for {task!r} among {len(srv.requests)} requests")


def _assert_nothing_leaked(keys: Keys, srv: ScriptedServer, task: str) -> int:
    pids, found = _sweep_result(srv, task)
    assert keys.canary in found, (task, found)  # the sweep did read environ and memory
    assert keys.model not in found and keys.token not in found, (task, found)
    everything = json.dumps(srv.requests)
    assert keys.model not in everything and keys.token not in everything
    return pids


def _script(keys: Keys, workspace: Path, *tasks: str) -> list[dict]:
    cmd = keys.sweep_command(workspace)
    return [{"match": t, "turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]},
                                   {"text": f"swept for {t}"}]} for t in tasks]


# ------------------------------------------------------------ the MCP lock

PROBE = r'''
import json, os, socket, sys, urllib.request, urllib.error
url, token_file, sock_path, target = sys.argv[1:5]
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
spawn = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "spawn", "arguments": {"task": "id > " + target, "cli": "sh"}}}
out = {}
for name, body, auth in (("init", init, None), ("spawn", spawn, None),
                         ("guess", spawn, "Bearer " + "A" * 43), ("basic", spawn, "Basic eDp5")):
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if auth:
        headers["authorization"] = auth
    req = urllib.request.Request(url, json.dumps(body).encode(), headers)
    try:
        out[name] = urllib.request.urlopen(req, timeout=10).status
    except urllib.error.HTTPError as e:
        out[name] = e.code
try:
    open(token_file).read()
    out["token_file"] = "read"
except OSError as e:
    out["token_file"] = type(e).__name__
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sock_path)
    out["socket"] = "connected"
except OSError as e:
    out["socket"] = type(e).__name__
print(json.dumps(out))
'''


@as_root
@needs_setpriv
def test_another_user_gets_401_and_starts_nothing(zap, tmp_path):
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SESSION"}
    shared = Path(tempfile.mkdtemp(prefix="zapcli-sock-"))
    os.chmod(shared, 0o777)  # the folder lets anyone in: the socket's own mode must keep them out
    sock = shared / "zapcli.sock"
    http = subprocess.Popen([sys.executable, "-m", "zapcli", "mcp", "serve", "--http", "0"],
                            env=env, cwd=zap.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    unix = subprocess.Popen([sys.executable, "-m", "zapcli", "mcp", "serve", "--socket", str(sock)],
                            env=env, cwd=zap.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        line = http.stderr.readline().decode()  # type: ignore[union-attr]
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        token_file = zap.home / "mcp" / f"http-{port}.token"
        token = token_of(zap, port)
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        wait_until(sock.exists, 30)
        assert oct(sock.stat().st_mode & 0o777) == "0o600"
        url = f"http://127.0.0.1:{port}/mcp"
        target = shared / "owned"
        nobody = subprocess.run([*_as(65534), "/usr/bin/python3", "-c", PROBE, url, str(token_file),
                                 str(sock), str(target)], capture_output=True, text=True,
                                timeout=60, env={})
        got = json.loads(nobody.stdout)
        assert got == {"init": 401, "spawn": 401, "guess": 401, "basic": 401,
                       "token_file": "PermissionError", "socket": "PermissionError"}, nobody.stderr
        assert not list(zap.home.glob("subagents/*.jsonl")) and not target.exists()  # nothing started

        async def tools() -> list[str]:
            async with http_client(url, token) as c:
                return [t.name for t in (await c.list_tools()).tools]
        assert "spawn" in anyio.run(tools)
    finally:
        for proc in (http, unix):
            proc.terminate()
            proc.wait(20)
        shutil.rmtree(shared, ignore_errors=True)
    assert not token_file.exists() and not sock.exists()  # removed when they stopped


# ------------------------------------------------------------ the /proc sweeps


def _decoy(keys: Keys, user: User | None = None) -> subprocess.Popen:
    """Not zapcli: a process holding a key-like value in its environment and
    memory, readable by its own user. A sweep outside the sandbox finds it
    (the sweep works); one inside does not see it."""
    argv = [user.python if user else sys.executable, "-c",
            "import sys, time; v = sys.argv[1] * 1; time.sleep(120)",
            keys.canary.replace("canary", "decoy")]
    return subprocess.Popen([*(_as(user.uid) if user else []), *argv], env={"DECOY": argv[-1]},
                            stdin=subprocess.DEVNULL)


async def _spawn_and_wait(params: StdioServerParameters, task: str, *, slow: str | None = None
                          ) -> None:
    """Through `zapcli mcp serve`: an agent subagent (`--approval full`) for
    `task`, waited for; with `slow`, one more that stays alive meanwhile."""
    async with Client(params) as c:
        if slow:
            await c.call_tool("spawn", {"task": slow, "approval": "full"})
        sid = (await c.call_tool("spawn", {"task": task, "approval": "full"})).structured_content["id"]
        for _ in range(10):  # the server caps one wait under a minute (C22)
            done = await c.call_tool("wait", {"ids": [sid], "timeout": 50})
            if "still running" not in str(done.content):
                break


@as_root
@needs_bwrap
def test_a_sandboxed_sweep_as_root_finds_no_key(zap):
    keys = Keys()
    tasks = ("root sweep from run", "root sweep via mcp")
    decoy = _decoy(keys)
    try:
        with ScriptedServer(_script(keys, zap.cwd, *tasks)) as srv:
            zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                           OPENAI_API_KEY=keys.model, MY_TOKEN=keys.token)
            proc = zap("run", "--approval", "full", tasks[0], timeout=120)
            assert proc.returncode == 0, proc.err
            zap.env["ZAPCLI_APPROVAL"] = "full"  # the server's person allows the spawns' full mode
            anyio.run(_spawn_and_wait, server_params(zap), tasks[1])
            for task in tasks:
                assert _assert_nothing_leaked(keys, srv, task) < 10  # only its own sandbox's pids
                assert keys.canary.replace("canary", "decoy") not in _sweep_result(srv, task)[1]
    finally:
        decoy.kill()
        decoy.wait()


@as_root
@needs_setpriv
@needs_bwrap
def test_sweeps_as_a_normal_user_find_no_key_in_or_out_of_the_sandbox(other_user):
    keys = Keys()
    sandboxed, unsandboxed, via_mcp = "user sweep sandboxed", "user sweep unsandboxed", "user via mcp"
    script = [*_script(keys, Path(tempfile.gettempdir()), sandboxed, unsandboxed, via_mcp),
              {"match": "stay alive", "turns": [{"text": "slow", "delay_s": 90}]}]
    with ScriptedServer(script) as srv:
        user = other_user(keys, srv.base_url)
        for rule in script[:3]:  # the sweep script where the user's workspace is
            rule["turns"][0]["tool_calls"][0]["arguments"]["command"] = keys.sweep_command(
                user.work, user.python)
        decoy = _decoy(keys, user)
        # the person runs the server in full mode: a model's spawn is held to that ceiling
        params = StdioServerParameters(command=user.argv()[0], args=[*user.argv("mcp", "serve")[1:]],
                                       env={**user.env, "ZAPCLI_APPROVAL": "full"}, cwd=str(user.work))

        def runs() -> None:
            """While `mcp serve` (a key in its environment), a slow subagent's
            runner and a `zapcli wait` on it live: the two `zapcli run` sweeps."""
            wait_until(lambda: any("stay alive" in json.dumps(r) for r in srv.requests), 60)
            listed = subprocess.run(user.argv("list", "--all", "--json"), env=user.env,
                                    cwd=user.work, capture_output=True, timeout=60)
            slow = json.loads(listed.stdout)["subagents"][0]["id"]
            waiter = subprocess.Popen(user.argv("wait", slow), env=user.env, cwd=user.work,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for task, extra in ((unsandboxed, ["--no-sandbox"]), (sandboxed, [])):
                    done = subprocess.run(user.argv("run", "--approval", "full", *extra, task),
                                          env=user.env, cwd=user.work, capture_output=True,
                                          timeout=180)
                    assert done.returncode == 0, done.stderr[-2000:]
            finally:
                waiter.kill()

        async def go() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(_spawn_and_wait, params, via_mcp, slow="stay alive"))
                await anyio.to_thread.run_sync(runs)
        try:
            anyio.run(go)
        finally:
            decoy.kill()
            decoy.wait()
        for task in (sandboxed, unsandboxed, via_mcp):
            _assert_nothing_leaked(keys, srv, task)
        decoy_value = keys.canary.replace("canary", "decoy")
        assert decoy_value in _sweep_result(srv, unsandboxed)[1]  # same-user processes are read
        assert decoy_value not in _sweep_result(srv, sandboxed)[1]
