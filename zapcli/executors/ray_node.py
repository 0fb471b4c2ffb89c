"""The node side of the Ray executor: the pool's agent on one Ray node.

Imports `zapcli.trail`, `zapcli.paths`, `zapcli.supervisor`, `zapcli.locks`,
`zapcli.executors.local` (to end a runner's tree), `zapcli.executors.ray_wire`;
`ray` and `ray_kv` only for the pool's hello (`pool_hello`): the agent itself
is plain Python, which the pool's dispatcher makes a Ray actor, one per
node, placed on it with a node-affinity strategy.

The agent starts each subagent's ordinary runner (`zapcli run --subagent
--id ID`) as its own OS process with its own trail in the node's state
folder, and is otherwise stateless: what it knows of a runner is in that
trail (its `process` record: pid and create time). So a new agent (the
pool was replaced) adopts the runners an old one started, and a runner
outlives its agent: it is launched through a short-lived trampoline that
makes it the leader of a session of its own, re-parented to init, where
Ray's clean-up of a dead worker's children does not reach it.

- `start`: create the node trail from the caller's `spawn` record (a cwd
  that does not exist here becomes a scratch folder, said in a diagnostic),
  launch the runner with the forwarded variables handed over as locally
  (never in its environment block), record its `process`; once per node
  (the trail is created exclusively, under a node-local lock).
- `report`: for each runner, what its trail (whole records), stdout and
  stderr gained past the offsets the dispatcher asks from, and whether it
  has ended (then everything was read). Asked with `hold_s`, it answers
  once there is something to say, at most that late: a runner's end wakes
  it at once (a pidfd per runner, where Linux has them), new bytes within
  HOLD_LOOK_S, and a start the dispatcher has not seen the answer of
  (`start` answers with the agent's count of starts) at once: it asks
  again, with that runner — so an end comes home in milliseconds, and a
  quiet runner costs no call per tick.
- `deliver`: a record from the caller, appended to the node trail once
  (`from_caller`); a terminal status also ends the runner's tree within
  the caller's grace.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from zapcli.executors import ray_wire as wire
from zapcli.selfexec import python_c, python_m

CHUNK = 256 * 1024  # bytes per stream per report: a busy runner ships over several ticks
HOLD_LOOK_S = 0.1  # a held report looks at the runners' file sizes this often
FRESH_START_S = 1.0  # a start answered this recently and not taken by the asker: a held report answers
STREAMS = {"t": ".jsonl", "o": ".out", "e": ".err"}
# Forks the runner into a session of its own and exits: the runner is then
# nobody's child (init reaps it), so the agent's end never takes it along.
TRAMPOLINE = (
    "import os,sys\n"
    "pid=os.fork()\n"
    "if pid==0:\n"
    "    os.setsid()\n"
    "    fd=os.open(os.devnull,os.O_RDWR);os.dup2(fd,0);os.dup2(fd,1)\n"
    "    try:os.execv(sys.argv[1],sys.argv[1:])\n"
    "    finally:os._exit(127)\n"
    "sys.stdout.write(str(pid));sys.stdout.flush()\n"
)


def node_home(caller: dict[str, Any]) -> str | None:
    """The state folder for this caller's subagents on this node: the node's
    own `ZAPCLI_HOME`, else the platform default (None) — except on the
    caller's own machine (a local cluster), where a node without a folder of
    its own (or with the caller's) keeps them in `<caller's folder>/ray-node`:
    inside the folder the caller chose, apart from its own subagents."""
    from zapcli.executors.ray_wire import machine_id

    own = os.environ.get("ZAPCLI_HOME")
    theirs = caller.get("state")
    if caller.get("machine") == machine_id() and isinstance(theirs, str) and os.path.isdir(theirs):
        if (not own or os.path.realpath(own) == theirs) and os.access(theirs, os.W_OK):
            return os.path.join(theirs, "ray-node")
    return own or None


def _spawn_line(sid: str, raw: bytes) -> tuple[bytes, str | None]:
    """The caller's spawn record for this node: the same bytes, unless its
    working directory does not exist here; then a scratch folder in the
    node's state folder is used instead, and the note says so."""
    from zapcli.paths import ensure_dir, state_dir

    rec = orjson.loads(raw)
    cwd = str(rec.get("cwd") or "/")
    if os.path.isdir(cwd):
        return raw, None
    scratch = ensure_dir(state_dir() / "work" / sid)
    rec["cwd"] = rec["workspace"] = str(scratch)
    note = f"{cwd} does not exist on this Ray node; the subagent ran in {scratch} there"
    return orjson.dumps(rec) + b"\n", note


def _launch(sid: str, cwd: str, forwarded: dict[str, str]) -> int:
    """Start the runner through the trampoline; its pid. Raises OSError."""
    from zapcli.paths import SUBAGENT_MARKER, own_process_env
    from zapcli.supervisor.launch import close_fds, secret_env
    from zapcli.trail import store

    env = {k: v for k, v in os.environ.items() if k != SUBAGENT_MARKER}
    env.update(forwarded)
    own_process_env(env)  # empty or relative PATH and PYTHONPATH entries name the runner's folder
    env, pass_fds = secret_env(env)  # the forwarded keys: not in /proc/<pid>/environ
    try:
        err_fd = os.open(store.path_for(sid, ".err"), os.O_WRONLY | os.O_APPEND | os.O_CREAT
                         | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            tramp = subprocess.run(
                python_c(TRAMPOLINE, *python_m("zapcli", "run", "--subagent", "--id", sid),
                         flags=("-S",)), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=err_fd, cwd=cwd if os.path.isdir(cwd) else "/", env=env, close_fds=True,
                pass_fds=pass_fds, timeout=60, check=False)
        finally:
            os.close(err_fd)
    finally:
        close_fds(pass_fds)
    if tramp.returncode != 0 or not tramp.stdout.strip().isdigit():
        raise OSError(f"the runner could not be started (exit {tramp.returncode})")
    return int(tramp.stdout)


def _unrecorded_runner(sid: str) -> int | None:
    """The pid of a live runner of `sid` whose launch was never recorded (its
    agent died right after the launch: Ray's memory monitor, a crash). It
    waits for a `process` record naming it (`zapcli.runner.main._claim`):
    recording it lets it run, where a second launch would be refused."""
    import psutil

    tail = ["run", "--subagent", "--id", sid]
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info.get("cmdline") or []
        if cmd[-len(tail):] == tail and "zapcli" in cmd:
            return int(proc.pid)
    return None


class NodeAgent:
    """One per node and pool (see the module docstring). Its methods run on
    several threads at once (a threaded Ray actor)."""

    def __init__(self, caller: dict[str, Any]):
        from zapcli import __version__
        from zapcli.trail.records import SCHEMA_VERSION

        self.caller = caller
        home = node_home(caller)
        if home:
            os.environ["ZAPCLI_HOME"] = home  # this process serves one caller only
        self.refusal = None
        if caller.get("zapcli") != __version__ or caller.get("format") != SCHEMA_VERSION:
            self.refusal = (f"zapcli {__version__} (trail format {SCHEMA_VERSION}) on Ray node "
                            f"{socket.gethostname()}, {caller.get('zapcli')} (trail format "
                            f"{caller.get('format')}) on the caller: install the same zapcli version there")
        self.procs: dict[str, dict[str, Any]] = {}  # sid -> its process record
        self.lock = threading.Lock()
        self.starts = 0  # starts answered ok: a held report answers when the dispatcher has seen fewer
        self.started_at = 0.0  # (monotonic) the last of them

    def hello(self) -> dict[str, Any]:
        from zapcli import __version__
        from zapcli.paths import state_dir

        return {"zapcli": __version__, "python": sys.executable, "home": str(state_dir()),
                "host": socket.gethostname(), "refusal": self.refusal}

    # -- start --------------------------------------------------------------
    def start(self, sid: str, sub: dict[str, Any]) -> dict[str, Any]:
        """Start the runner of `sid` here, once. {"ok": True, "pid"} or
        {"ok": False, "reason"} (it cannot run on this node)."""
        from zapcli.errors import ZapcliError
        from zapcli.locks import LockTimeout, exclusive
        from zapcli.paths import ensure_dir, locks_dir

        if self.refusal:
            return {"ok": False, "reason": self.refusal}
        try:
            with exclusive(ensure_dir(locks_dir()) / f"ray-start-{sid}.lock", 60):
                return self._start(sid, sub)
        except (OSError, ValueError, ZapcliError, LockTimeout) as exc:
            why = exc.message if isinstance(exc, ZapcliError) else str(exc) or type(exc).__name__
            return {"ok": False, "reason": f"could not start on Ray node {socket.gethostname()}: {why}"}

    def _start(self, sid: str, sub: dict[str, Any]) -> dict[str, Any]:
        import base64

        from zapcli.paths import state_dir
        from zapcli.supervisor.launch import process_create_time
        from zapcli.trail import store

        path = store.path_for(sid)
        orphan = None
        if path.exists():
            proc = self._process(sid)
            if proc is not None:  # started before (an earlier agent): adopt it
                return {"ok": True, "pid": proc.get("pid"), "adopted": True, "starts": self._count()}
            # created, but its launch was not recorded (the agent died in between):
            # a runner it launched waits for that record (its claim); else launch now
            line, note, orphan = None, None, _unrecorded_runner(sid)
        else:
            line, note = _spawn_line(sid, base64.b64decode(sub["spawn"]))
            store.create_trail_line(sid, line)
        spawn = self._spawn(sid)
        pid = orphan or _launch(sid, str(spawn.get("cwd") or "/"), dict(sub.get("env") or {}))
        rec = {"pid": pid, "create_time": process_create_time(pid), "mono": time.monotonic(),
               "node": socket.gethostname()}
        store.append(path, "process", rec)
        with self.lock:
            self.procs[sid] = rec
        for early in sub.get("early") or ():  # sent while it was queued on the caller
            apply_from_caller(sid, early, rec)
        where = f"on Ray node {socket.gethostname()}; its files are in {state_dir()} there"
        store.append(path, "diagnostic", {"dimension": "executor", "name": "node", "message": f"running {where}"})
        if note:
            store.append(path, "diagnostic", {"dimension": "executor", "name": "cwd", "message": note})
        return {"ok": True, "pid": pid, "starts": self._count()}

    def _count(self) -> int:
        with self.lock:
            self.starts += 1
            self.started_at = time.monotonic()
            return self.starts

    def _unseen_start(self, starts: int) -> bool:
        """A start answered lately that the asker had not taken when it asked
        (`starts`: its count then). Only lately: an answer the asker never
        takes (the subagent ended meanwhile) must not keep every report short."""
        return self.starts > starts and time.monotonic() - self.started_at < FRESH_START_S

    def _spawn(self, sid: str) -> dict[str, Any]:
        from zapcli.trail import reader, store

        recs = reader.read(store.path_for(sid)).records
        return recs[0] if recs else {}

    def _process(self, sid: str) -> dict[str, Any] | None:
        """Its process record (read once from the node trail, then kept)."""
        from zapcli.trail import reader, store

        with self.lock:
            if sid in self.procs:
                return self.procs[sid]
        try:
            recs = reader.read(store.path_for(sid)).records
        except OSError:
            return None
        proc = next((r for r in recs if r.get("type") == "process"), None)
        if proc is not None:
            with self.lock:
                self.procs[sid] = proc
        return proc

    # -- report -------------------------------------------------------------
    def report(self, wants: dict[str, list[int]], hold_s: float = 0.0,
               starts: int = 0) -> dict[str, dict[str, Any]]:
        """For each sid: {"state": "unstarted"} (`wire.NodeState`) when nothing of it is here,
        else the bytes past `wants[sid]` (t, o, e offsets) per stream as
        [offset, data], "alive", and "end" (recorded / unrecorded) once it
        has ended and everything was read. `hold_s`: not before there is
        something to say (`_hold`), at most that long; `starts`: the
        agent's count of starts in the last start answer the asker took."""
        if hold_s > 0:
            self._hold(wants, hold_s, starts)
        return {sid: self._report_one(sid, offsets) for sid, offsets in wants.items()}

    def _hold(self, wants: dict[str, list[int]], hold_s: float, starts: int) -> None:
        """Wait until a wanted runner has ended or is not here, one of its
        files is no longer the size asked from, or a start answered after
        the asker's last lately (`starts`: it is not in `wants`); at most `hold_s`.
        An end is seen through the runner's pidfd the moment it happens;
        the rest is looked at every HOLD_LOOK_S."""
        import select

        give_up = time.monotonic() + hold_s
        fds: list[int] = []
        try:
            poller = select.poll()
            for sid in wants:
                fd = _pidfd(self._process(sid))
                if fd is None:
                    if not self._running(sid):
                        return
                    continue
                fds.append(fd)
                poller.register(fd, select.POLLIN)
            while True:
                if any(self._moved(sid, offsets) for sid, offsets in wants.items()):
                    return
                if len(fds) < len(wants) and not all(self._running(sid) for sid in wants):
                    return  # a runner without a pidfd ended
                left = give_up - time.monotonic()
                if left <= 0 or self._unseen_start(starts):
                    return
                if poller.poll(min(left, HOLD_LOOK_S) * 1000):
                    return  # a runner ended
        finally:
            for fd in fds:
                os.close(fd)

    def _running(self, sid: str) -> bool:
        from zapcli.supervisor.liveness import is_alive

        proc = self._process(sid)
        return proc is not None and is_alive(proc.get("pid"), proc.get("create_time"))

    def _moved(self, sid: str, offsets: list[int]) -> bool:
        """One of its files is not the size the report is asked from."""
        from zapcli.trail import store

        for suffix, offset in zip(STREAMS.values(), offsets, strict=True):
            try:
                size = os.stat(store.path_for(sid, suffix), follow_symlinks=False).st_size
            except OSError:
                size = 0
            if size != offset:
                return True
        return False

    def _report_one(self, sid: str, offsets: list[int]) -> dict[str, Any]:
        from zapcli.supervisor.liveness import is_alive
        from zapcli.trail import reader, store

        proc = self._process(sid)
        if proc is None:
            return {"state": wire.NodeState.UNSTARTED.value}
        alive = is_alive(proc.get("pid"), proc.get("create_time"))  # first: then a read is complete
        out: dict[str, Any] = {"state": (wire.NodeState.RUNNING if alive else wire.NodeState.ENDED).value,
                               "alive": alive}
        whole = True
        for (stream, suffix), offset in zip(STREAMS.items(), offsets, strict=True):
            data, start, more = _read_from(store.path_for(sid, suffix), offset, stream == "t")
            whole = whole and not more
            if data:
                out[stream] = [start, data]
        if not alive and whole:
            out["end"] = (wire.EndHow.RECORDED if reader.first_terminal(store.path_for(sid))
                          else wire.EndHow.UNRECORDED).value
            with self.lock:
                self.procs.pop(sid, None)
        return out

    # -- deliver ------------------------------------------------------------
    def deliver(self, sid: str, rec: dict[str, Any]) -> bool:
        """Append a caller record to the node trail (once). False when its
        runner has not been started here (the dispatcher keeps it)."""
        proc = self._process(sid)
        if proc is None:
            return False
        apply_from_caller(sid, rec, proc)
        return True


def _pidfd(proc: dict[str, Any] | None) -> int | None:
    """A pidfd of the recorded runner while it is still that process (it
    becomes readable when it ends); None without one (not started here,
    ended, no pidfds on this system)."""
    from zapcli.supervisor.liveness import is_alive

    if proc is None or not hasattr(os, "pidfd_open"):
        return None
    pid = proc.get("pid")
    try:
        fd = os.pidfd_open(pid)  # type: ignore[arg-type]
    except (OSError, TypeError, ValueError):
        return None
    if is_alive(pid, proc.get("create_time")):  # after the open: the fd is of that process
        return fd
    os.close(fd)
    return None


def _read_from(path: Path, offset: int, whole_lines: bool) -> tuple[bytes, int, bool]:
    """(bytes from `offset`, where they start, whether unread bytes are left).
    A file now shorter than `offset` (a trimmed trail) is read from its start
    again; the trail is read in whole records only."""
    try:
        size = os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return b"", offset, False
    if size < offset:
        offset = 0
    if size == offset:
        return b"", offset, False
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(CHUNK)
        more = offset + len(data) < size
        if whole_lines:  # a torn last line waits for its end (a dead runner's never comes)
            if b"\n" not in data and more:  # one record longer than a chunk: all of it
                data += f.readline()
                more = offset + len(data) < size
            data = data[: data.rfind(b"\n") + 1]
    return data, offset, more


def apply_from_caller(sid: str, rec: dict[str, Any], runner: dict[str, Any]) -> bool:
    """Append one caller record to the node trail (once); a terminal status
    ends the runner's tree too. Returns False for a duplicate."""
    from zapcli.trail import ending, reader, store
    from zapcli.trail.model import Outcome, Status

    path = store.path_for(sid)
    rtype, caller_seq = str(rec.get("type")), rec.get("seq")
    fields = {k: v for k, v in rec.items() if k not in ("v", "seq", "ts", "type", "mono")}
    fields.update(from_caller=True, caller_seq=caller_seq)
    with store.locked(path):  # the runner settles approvals under this lock too
        recs = reader.read(path).records
        if any(r.get("from_caller") and r.get("caller_seq") == caller_seq and r.get("type") == rtype
               for r in recs):
            return False
        status = Status.parse(rec.get("status")) if rtype == "status" else None
        if status is None or not status.terminal:
            store.append(path, rtype, fields)
            return True
        for key in ("status", "exit_code", "reason"):
            fields.pop(key, None)
        by = fields.pop("by", None)
        ending.end(path, Outcome(status, rec.get("exit_code"), rec.get("reason")), by=by, **fields)
    grace = rec.get("grace_s")
    if not isinstance(grace, (int, float)):
        grace = recs[0].get("kill_grace_s", 3) if recs else 3
    from zapcli.executors.local import LocalExecutor

    threading.Thread(target=LocalExecutor().signal, args=(runner, float(grace)), daemon=True).start()
    return True


def pool_hello(context: Any, caller: dict[str, Any]) -> dict[str, Any]:
    """What the pool says first: its zapcli version and trail format, and
    whether they are the caller's; where it runs; what no longer holds of
    the private Ray API (`ray_kv.problems`)."""
    import ray

    from zapcli import __version__
    from zapcli.executors import ray_kv as kv
    from zapcli.trail.records import SCHEMA_VERSION

    ok = caller.get("zapcli") == __version__ and caller.get("format") == SCHEMA_VERSION
    return {"ok": ok, "zapcli": __version__, "format": SCHEMA_VERSION, "ray": ray.__version__,
            "python": sys.executable, "node": ray.get_runtime_context().get_node_id(),
            "session": str(context.address_info["session_dir"]).rstrip("/").rsplit("/", 1)[-1],
            "private_api": kv.problems(context)}
