"""The node side of the Ray executor: the job's entrypoint.

Imports `zapcli.trail`, `zapcli.paths`, `zapcli.executors.local` (to end the runner's tree), `zapcli.supervisor`;
`ray._raylet.GcsClient` only in the inbox thread (this runs on a Ray node,
inside a Ray job, which sets RAY_ADDRESS to the cluster's GCS).

`python -m zapcli.executors.ray_node run ID` runs in the job's working_dir
package, which holds `spawn.jsonl` (the caller's `spawn` record, byte for
byte) and maybe `env.json` (the variables `ray.env` forwards). It creates the
subagent's trail in the NODE's state folder (its `ZAPCLI_HOME` or the
platform default), starts the ordinary runner `zapcli run --subagent --id ID`
as its child (same process group: Ray's stop and Ray's fate sharing reach
it; the forwarded secrets handed over as `supervisor.launch.secret_env` does
locally, never in its environment block), and while it runs:

- ships the trail (whole lines), stdout and stderr home through the job's own
  log, one frame per line `ZAPCLI1 <t|o|e> <offset> <base64>`, every 250 ms
  and in full at the end, then `ZAPCLI1 end <rc> recorded|unrecorded`;
- polls the inbox every 100 ms: GCS entries `zapcli_in_<id>_<seq>.json` the
  caller's `deliver` put there (steer, approval decisions, a terminal status),
  appended to the node's trail with `from_caller` and `caller_seq` (once
  each), where the runner reads them; a terminal status (a `kill`, an
  observer's timeout) also ends the runner's tree within the caller's grace.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

FRAME = "ZAPCLI1"
STREAMS = {"t": ".jsonl", "o": ".out", "e": ".err"}
SHIP_INTERVAL_S = 0.25
INBOX_POLL_S = 0.1
CHUNK = 48 * 1024  # raw bytes per frame: a 64 KB log line
INBOX = "zapcli_in_"  # as ray_api.INBOX (this side does not import the caller's HTTP module)


class Shipper:
    """Prints what each of the node's files gained since the last call."""

    def __init__(self, sid: str):
        from zapcli.trail import store

        self.paths = {k: store.path_for(sid, suffix) for k, suffix in STREAMS.items()}
        self.sent = dict.fromkeys(STREAMS, 0)
        self.lock = threading.Lock()

    def ship(self) -> None:
        with self.lock:
            for stream, path in self.paths.items():
                try:
                    with open(path, "rb") as f:
                        f.seek(self.sent[stream])
                        data = f.read()
                except OSError:
                    continue
                if stream == "t":  # whole records only: a torn tail waits for its newline
                    data = data[: data.rfind(b"\n") + 1]
                for i in range(0, len(data), CHUNK):
                    part = data[i:i + CHUNK]
                    sys.stdout.write(f"{FRAME} {stream} {self.sent[stream]} "
                                     f"{base64.b64encode(part).decode()}\n")
                    self.sent[stream] += len(part)
            sys.stdout.flush()


def _node_spawn_line(sid: str, raw: bytes) -> tuple[bytes, str | None]:
    """The caller's spawn record for this node: the same bytes, unless its
    working directory does not exist here; then a scratch folder in the node's
    state folder is used instead, and the note says so."""
    from zapcli.paths import ensure_dir, state_dir

    rec = orjson.loads(raw)
    cwd = str(rec.get("cwd") or "/")
    if os.path.isdir(cwd):
        return raw, None
    scratch = ensure_dir(state_dir() / "work" / sid)
    rec["cwd"] = rec["workspace"] = str(scratch)
    note = f"{cwd} does not exist on this Ray node; the subagent ran in {scratch} there"
    return orjson.dumps(rec) + b"\n", note


def _forwarded_env() -> dict[str, str]:
    """The caller's variables named by `ray.env` (read once, then removed)."""
    path = Path("env.json")
    try:
        env = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    try:
        path.unlink()
    except OSError:
        pass
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def _early_records() -> list[dict[str, Any]]:
    try:
        lines = Path("inbox.jsonl").read_bytes().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _start(sid: str) -> tuple[subprocess.Popen, dict[str, Any]]:
    """Create the node trail from spawn.jsonl, launch the runner, record its process."""
    from zapcli.paths import state_dir
    from zapcli.supervisor.launch import close_fds, process_create_time, secret_env
    from zapcli.trail import store

    line, note = _node_spawn_line(sid, Path("spawn.jsonl").read_bytes())
    store.create_trail_line(sid, line)
    env = {k: v for k, v in os.environ.items() if k != "ZAPCLI_SUBAGENT_ID"}
    env.update(_forwarded_env())
    # the forwarded keys reach the runner as locally: not in its /proc/<pid>/environ
    env, pass_fds = secret_env(env)
    try:
        err_fd = store.create_exclusive(store.path_for(sid, ".err"))
        try:
            proc = subprocess.Popen([sys.executable, "-m", "zapcli", "run", "--subagent", "--id", sid],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err_fd,
                                    close_fds=True, pass_fds=pass_fds, env=env)
        finally:
            os.close(err_fd)
    finally:
        close_fds(pass_fds)
    rec = {"pid": proc.pid, "create_time": process_create_time(proc.pid), "mono": time.monotonic(),
           "node": socket.gethostname()}
    store.append(store.path_for(sid), "process", rec)
    for early in _early_records():  # sent while it was queued on the caller
        apply_from_caller(sid, early, rec)
    where = f"on Ray node {socket.gethostname()}; its files are in {state_dir()} there"
    store.append(store.path_for(sid), "diagnostic", {"dimension": "executor", "name": "node",
                                                     "message": f"running {where}"})
    if note:
        store.append(store.path_for(sid), "diagnostic", {"dimension": "executor", "name": "cwd",
                                                         "message": note})
    return proc, rec


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
        if any(r.get("from_caller") and r.get("caller_seq") == caller_seq and r.get("type") == rtype
               for r in reader.read(path).records):
            return False
        status = Status.parse(rec.get("status")) if rtype == "status" else None
        if status is None or not status.terminal:
            store.append(path, rtype, fields)
            return True
        for key in ("status", "exit_code", "reason"):
            fields.pop(key, None)
        by = fields.pop("by", None)
        ending.end(path, Outcome(status, rec.get("exit_code"), rec.get("reason")), by=by, **fields)
    grace = rec.get("grace_s") if isinstance(rec.get("grace_s"), (int, float)) else None
    if grace is None:
        grace = orjson.loads(Path("spawn.jsonl").read_bytes()).get("kill_grace_s", 3)
    from zapcli.executors.local import LocalExecutor

    threading.Thread(target=LocalExecutor().signal, args=(runner, float(grace)), daemon=True).start()
    return True


class Inbox(threading.Thread):
    """Polls the cluster's GCS for records the caller delivered to this runner."""

    def __init__(self, sid: str, runner: dict[str, Any]):
        super().__init__(name="inbox", daemon=True)
        self.sid, self.runner = sid, runner
        self.prefix = f"gcs://{INBOX}{sid}_".encode()
        self.done = threading.Event()
        self.gcs: Any = None

    def run(self) -> None:
        try:
            from ray._raylet import GcsClient  # type: ignore[attr-defined]

            self.gcs = GcsClient(address=os.environ["RAY_ADDRESS"])
        except Exception as exc:  # noqa: BLE001 - no inbox: say so in the trail, run on
            from zapcli.trail import store

            store.append(store.path_for(self.sid), "diagnostic", {
                "dimension": "executor", "name": "inbox",
                "message": f"send/approve/deny cannot reach this runner: {type(exc).__name__}: {exc}"})
            return
        while not self.done.is_set():
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - a GCS hiccup: try again next tick
                sys.stderr.write(f"zapcli ray_node inbox: {type(exc).__name__}: {exc}\n")
            self.done.wait(INBOX_POLL_S)

    def poll(self) -> None:
        for key in sorted(self.gcs.internal_kv_keys(self.prefix, None)):
            value = self.gcs.internal_kv_get(key, None)
            if value:
                rec = orjson.loads(value)
                if isinstance(rec, dict):
                    apply_from_caller(self.sid, rec, self.runner)
            self.gcs.internal_kv_del(key, False, None)

    def close(self) -> None:
        self.done.set()
        self.join(timeout=2)
        if self.gcs is not None:
            try:  # what came too late is not left in the cluster
                self.gcs.internal_kv_del(self.prefix, True, None)
            except Exception:  # noqa: BLE001
                pass


def run(sid: str) -> int:
    """The job's entrypoint. Exit 0 when the runner recorded its end."""
    from zapcli.trail import reader, store

    # Ray's stop TERMs every process of the job at once: the runner ends its
    # own work; this process keeps shipping until the runner is gone.
    signal.signal(signal.SIGTERM, lambda n, f: None)
    proc, runner = _start(sid)
    shipper = Shipper(sid)
    inbox = Inbox(sid, runner)
    inbox.start()
    while proc.poll() is None:
        shipper.ship()
        try:
            proc.wait(SHIP_INTERVAL_S)
        except subprocess.TimeoutExpired:
            pass
    inbox.close()
    shipper.ship()
    final = reader.first_terminal(store.path_for(sid))
    sys.stdout.write(f"{FRAME} end {proc.returncode} {'recorded' if final else 'unrecorded'}\n")
    sys.stdout.flush()
    return 0 if final is not None else 1


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "run":
        sys.stderr.write("usage: python -m zapcli.executors.ray_node run ID\n")
        return 2
    return run(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
