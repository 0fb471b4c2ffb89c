"""What every attack test needs (docs/explanation/rules.md#boundary): unique key-like values, a
listener on 127.0.0.1 that records what reaches it, a folder outside the
workspace, and another local user (its own uid, home, state and workspace) to
attack from or to be attacked.

Security tests assert the outside effect — a file in `outside`, a hit on the
listener, a key in a request body — never zapcli's own message.
"""

from __future__ import annotations

import http.server
import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import uuid
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO

SETPRIV = shutil.which("setpriv")
ROOT = os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT, reason="these attacks need root to play another user")
needs_setpriv = pytest.mark.skipif(not SETPRIV, reason="setpriv (util-linux) is not installed")

# A /proc sweep for key-like values (environ and memory of every visible process).
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


# --------------------------------------------------------------- other users


UID_LOCKS = Path(tempfile.gettempdir()) / "zapcli-test-uids"  # one lock file per uid played


def _free_uid() -> tuple[int, int]:
    """A uid with no account and no process on this machine, and the fd of
    its lock, held while it is played: two test processes (xdist workers,
    or two runs on one machine) that looked at the same moment picked the
    same uid, and the first to close killed the other's processes."""
    import fcntl

    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    busy = {p.uids().real for p in psutil.process_iter() if _alive(p)}
    for uid in range(61800, 61999):
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            if uid in busy:
                continue
        fd = os.open(UID_LOCKS / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another test process plays it
            os.close(fd)
            continue
        return uid, fd
    pytest.skip("no free uid in 61800-61999 to play another user")
    raise AssertionError  # unreachable


def _alive(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _as(uid: int) -> list[str]:
    return [SETPRIV or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


_FOUND: list[tuple[str, str]] = []  # the Python another user may run, once found


class User:
    """Another local user: its own uid (no account needed), home, state,
    config and workspace folders, and the environment its zapcli runs with."""

    def __init__(self, keys: Keys, base_url: str):
        self.uid, self._lock = _free_uid()
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
        interpreter under /root is not theirs to run). Asked once a test process:
        every uid here is as foreign to /root as the next (~1.2 s of CPU a probe)."""
        if _FOUND:
            return _FOUND[0]
        site = sysconfig.get_paths()["purelib"]
        probe = ("import subprocess, sys, zapcli, openai, mcp; "
                 "subprocess.run([sys.executable, '-c', 'import zapcli'], check=True)")
        same = f"{sys.version_info[0]}.{sys.version_info[1]}"
        for python, path in ((sys.executable, str(REPO)), (f"/usr/bin/python{same}",
                                                             f"{REPO}{os.pathsep}{site}")):
            ok = subprocess.run([*_as(self.uid), python, "-c", probe], capture_output=True,
                                env={"PYTHONPATH": path}, cwd=self.work, timeout=60)
            if ok.returncode == 0:
                _FOUND.append((python, path))
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
        os.close(self._lock)  # the uid is free for another test once its processes are gone


@pytest.fixture
def other_user(request):
    made: list[User] = []

    def make(keys: Keys, base_url: str) -> User:
        made.append(User(keys, base_url))
        return made[-1]

    yield make
    for user in made:
        user.close()



class Listener:
    """An HTTP server on 127.0.0.1 that answers 200 to everything and keeps
    each request (method, path, headers, body): where a planted `base_url`,
    a curl or an exfiltrating MCP server would send a key."""

    def __init__(self) -> None:
        self.hits: list[dict] = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
                hits.append({"method": self.command, "path": self.path,
                             "headers": dict(self.headers), "body": body})
                out = b"{}"
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def saw(self, needle: str) -> bool:
        """Whether any request carried `needle` (path, a header or the body)."""
        return any(needle in json.dumps(hit) for hit in self.hits)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener():
    srv = Listener()
    yield srv
    srv.close()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workspace: an attack that lands a file here won."""
    out = tmp_path / "OUT"
    out.mkdir()
    return out


@pytest.fixture
def other():
    """A folder for another repository of the user's, outside the workspace and
    readable inside the sandbox (/tmp is hidden there): /var/tmp, a name of its own."""
    root = Path("/var/tmp") / f"zapcli-test-other-{uuid.uuid4().hex[:12]}"
    root.mkdir()
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
