"""Issue 18, tested as an attacker would (SPEC §18).

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
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO, wait_until
from tests.mcp.conftest import http_client, server_params, token_of
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing import ScriptedServer

SETPRIV = shutil.which("setpriv")
ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="these attacks need root to play another user")
needs_setpriv = pytest.mark.skipif(not SETPRIV, reason="setpriv (util-linux) is not installed")

SWEEP = r'''
import base64, os, re
PAT = re.compile(rb"sk-zaptest-[A-Za-z0-9_-]{8,80}")
found, pids, mems = set(), 0, 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    pids += 1
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            found.update(PAT.findall(fh.read()))
    except OSError:
        pass
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
    except OSError:
        continue
    with mem:
        for line in maps:
            parts = line.split()
            if "r" not in parts[1] or line.endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if hi - lo > 512 << 20:
                continue
            try:
                mem.seek(lo)
                found.update(PAT.findall(mem.read(hi - lo)))
                mems += 1
            except (OSError, ValueError, OverflowError):
                continue
print("PIDS", pids, "MEMS", mems, "FOUND", base64.b64encode(b"\n".join(sorted(found))).decode())
'''


class Keys:
    """Unique key-like values for one test: the caller's two keys and the canary."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:12]
        self.model = f"sk-zaptest-model-{tag}"
        self.token = f"sk-zaptest-mytok-{tag}"
        self.canary = f"sk-zaptest-canary-{tag}"

    def sweep_command(self, workspace: Path, python: str = sys.executable) -> str:
        (workspace / "sweep.py").write_text(SWEEP)
        return f"CANARY={self.canary} {python} {workspace / 'sweep.py'}"


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


# --------------------------------------------------------------- other users


def _free_uid() -> int:
    """A uid with no account and no process on this machine."""
    busy = {p.uids().real for p in psutil.process_iter() if _alive(p)}
    for uid in range(61800, 61999):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            if uid not in busy:
                return uid
    pytest.skip("no free uid in 61800-61999 to play another user")
    raise AssertionError  # unreachable


def _alive(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _as(uid: int) -> list[str]:
    return [SETPRIV or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


class User:
    """Another local user: its own uid (no account needed), home, state,
    config and workspace folders, and the environment its zapcli runs with."""

    def __init__(self, keys: Keys, base_url: str):
        self.uid = _free_uid()
        self.root = Path(tempfile.mkdtemp(prefix="zapcli-user-"))
        os.chmod(self.root, 0o755)
        self.home, self.work = self.root / "home", self.root / "work"
        for d in (self.home, self.work):
            d.mkdir()
            os.chown(d, self.uid, self.uid)
        self.python, path = self._python()
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                    "USER": f"u{self.uid}", "PYTHONPATH": path, "NO_COLOR": "1",
                    "ZAPCLI_HOME": str(self.home / "state"),
                    "ZAPCLI_CONFIG_HOME": str(self.home / "config"),
                    "ZAPCLI_SESSION": f"attack-{self.uid}", "OPENAI_BASE_URL": base_url,
                    "ZAPCLI_MODEL": "scripted", "OPENAI_API_KEY": keys.model,
                    "MY_TOKEN": keys.token}

    def _python(self) -> tuple[str, str]:
        """A Python this user may run that imports zapcli and its dependencies
        (and starts itself again, as spawn does): this one, or the system's
        of the same version with this one's packages (a venv built from an
        interpreter under /root is not theirs to run)."""
        site = sysconfig.get_paths()["purelib"]
        probe = ("import subprocess, sys, zapcli, openai, mcp; "
                 "subprocess.run([sys.executable, '-c', 'import zapcli'], check=True)")
        same = f"{sys.version_info[0]}.{sys.version_info[1]}"
        for python, path in ((sys.executable, str(REPO)), (f"/usr/bin/python{same}",
                                                             f"{REPO}{os.pathsep}{site}")):
            ok = subprocess.run([*_as(self.uid), python, "-c", probe], capture_output=True,
                                env={"PYTHONPATH": path}, cwd=self.work, timeout=60)
            if ok.returncode == 0:
                return python, path
        shutil.rmtree(self.root, ignore_errors=True)
        pytest.skip(f"no Python here that uid {self.uid} may run with zapcli's packages")
        raise AssertionError  # unreachable

    def argv(self, *args: str) -> list[str]:
        return [*_as(self.uid), self.python, "-m", "zapcli", *args]

    def close(self) -> None:
        for p in psutil.process_iter():
            try:
                if p.uids().real == self.uid:
                    p.kill()
            except psutil.Error:
                continue
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def other_user(request):
    made: list[User] = []

    def make(keys: Keys, base_url: str) -> User:
        made.append(User(keys, base_url))
        return made[-1]

    yield make
    for user in made:
        user.close()


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
        params = StdioServerParameters(command=user.argv()[0], args=[*user.argv("mcp", "serve")[1:]],
                                       env=user.env, cwd=str(user.work))

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
