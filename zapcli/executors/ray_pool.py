"""The caller's handle on its pool on a Ray cluster: start it, find it,
replace a dead one, read its status, hand it work. HTTP only (`ray_api`).

Imports `zapcli.executors.ray_api`, `ray_wire`, `ray_files`, `zapcli.paths`,
`zapcli.locks`, `zapcli.errors`; never `ray`.

What this machine keeps, under `<state>/ray/`: `<K>.json` (the pool's job,
generation, node and whether its hello was checked), `<K>.seen` (its time:
when a command last saw the pool running, so a burst of commands asks the
cluster for its job once every ENSURED_TTL_S) and, per subagent,
`<K>/pending/<id>` (submitted, not yet seen in the pool's status: what to
submit again if the answer was lost) and `<K>/cursor/<id>` (frames already
home). A command asks the cluster at most every STATUS_TTL_S for the pool's
job and status line, whatever number of subagents it looks at.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from zapcli.executors import ray_api as api
from zapcli.executors import ray_wire as wire
from zapcli.executors.base import ExecutorError
from zapcli.plain import plain
from zapcli.trail import jsonl

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

STATUS_TTL_S = 0.25
HELLO_WAIT_S = 90.0  # a pool's start on a loaded cluster (a job, a driver, ray.init)
SUBMIT_TIMEOUT_S = 10.0
RESUBMIT_EVERY_S = 2.0
DEFAULT_IDLE_S = 60.0
ALIVE_JOB = ("PENDING", "RUNNING")
ENSURED_TTL_S = 2.0
_views: dict[tuple[str, str], tuple[float, PoolView]] = {}
_ensured: dict[tuple[str, str], float] = {}  # this process saw the pool running then
_resubmitted: dict[str, float] = {}
SEND_WAIT_S = 5.0
_sending: list[Any] = []  # threads telling the pool things (see _in_background)


@plain
class PoolView:
    """The pool as one look found it. `err`: the cluster did not answer."""

    job: str | None = None  # the job's status (None: no such job)
    message: str = ""
    doc: dict[str, Any] | None = None  # its last status line
    err: str | None = None
    current: bool = False  # the status line is the current job's

    def entry(self, sid: str) -> list[Any] | None:
        subs = (self.doc or {}).get("subs") or {}
        got = subs.get(sid)
        return got if isinstance(got, list) and len(got) == 3 else None

    @property
    def dead(self) -> bool:
        return self.err is None and self.job not in ALIVE_JOB


class Pool:
    def __init__(self, addr: str, conf: dict[str, Any]):
        from zapcli.paths import state_dir

        self.addr, self.conf = addr, conf
        self.key = str(conf.get("pool") or wire.pool_key(str(state_dir()), addr))
        self.home = state_dir() / "ray"

    # -- this machine's record of it --------------------------------------
    def info(self) -> dict[str, Any]:
        try:
            doc = jsonl.loads((self.home / f"{self.key}.json").read_bytes())
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def _save(self, doc: dict[str, Any]) -> None:
        from zapcli.paths import ensure_dir, write_private

        ensure_dir(self.home)
        write_private(self.home / f"{self.key}.json", jsonl.dumps(doc))

    def _lock(self) -> Any:
        from zapcli.locks import exclusive
        from zapcli.paths import ensure_dir

        return exclusive(ensure_dir(self.home) / f"{self.key}.lock", 60)

    def _file(self, kind: str, sid: str) -> Path:
        from zapcli.paths import ensure_dir

        return ensure_dir(self.home / self.key / kind) / sid

    # -- starting and replacing it -------------------------------------------
    def ensure(self, *, wait: bool) -> dict[str, Any]:
        """A running pool's record, started (or replaced) when there is none;
        with `wait`, its hello checked. Raises ExecutorError when it cannot
        run: another zapcli version there, no Python that imports zapcli."""
        from zapcli.locks import LockTimeout

        seen = _ensured.get((self.addr, self.key))
        if not wait and seen is not None and time.monotonic() - seen < ENSURED_TTL_S:
            return self.info()
        doc = self.info()
        if doc.get("hello") and self._seen_lately():  # another command saw it running a moment ago
            return doc
        try:
            with self._lock():
                doc = self._ensure(wait)
        except LockTimeout:
            raise ExecutorError(f"the lock of the Ray pool record {self.home / self.key}.json "
                                "stayed busy; try again") from None
        except (OSError, ValueError) as exc:
            raise ExecutorError(f"the Ray cluster at {self.addr} did not answer ({api.why(exc)})") from None
        _views.pop((self.addr, self.key), None)
        _ensured[(self.addr, self.key)] = time.monotonic()
        if doc.get("hello"):
            self._saw()
        return doc

    def _seen_lately(self) -> bool:
        """A command saw the pool running less than ENSURED_TTL_S ago (one that
        died since loses nothing: submissions wait for the next pool)."""
        try:
            return 0 <= time.time() - os.stat(self.home / f"{self.key}.seen").st_mtime < ENSURED_TTL_S
        except OSError:
            return False

    def _saw(self) -> None:
        path = self.home / f"{self.key}.seen"
        try:
            os.utime(path)
        except FileNotFoundError:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600))
            except OSError:
                pass
        except OSError:
            pass

    def _ensure(self, wait: bool) -> dict[str, Any]:
        doc = self.info()
        job = api.job(self.addr, doc["job"]) if doc.get("job") else None
        if job is None or job.get("status") not in ALIVE_JOB:
            old = [*doc.get("old", ()), *([doc["job"]] if job is not None else [])]
            doc = self._submit(int(doc.get("gen") or 0) + 1, old)
        elif doc.get("old"):
            doc = self._tidy(doc)
        if wait and not doc.get("hello"):
            doc = self._hello(doc)
        return doc

    def _tidy(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Delete ended pools' jobs from Ray's job table; each stays listed here
        until Ray says it has no such job (one that just ended may still be
        written to by Ray after a first delete)."""
        left = []
        for old in doc.get("old") or ():
            try:
                if api.job(self.addr, old) is not None:
                    left.append(old)
                    api.call(self.addr, "DELETE", f"/api/jobs/{old}")
            except (OSError, ValueError):
                continue
        doc = {**doc, "old": left}
        self._save(doc)
        return doc

    def tidy(self) -> None:
        """`_tidy` when there is anything to delete and the record is free."""
        from zapcli.locks import LockTimeout, exclusive
        from zapcli.paths import ensure_dir

        if not self.info().get("old"):
            return
        try:
            with exclusive(ensure_dir(self.home) / f"{self.key}.lock", 0):
                self._tidy(self.info())
        except (LockTimeout, OSError, ValueError):
            pass

    def _submit(self, gen: int, old: list[str]) -> dict[str, Any]:
        from zapcli import __version__
        from zapcli.paths import state_dir
        from zapcli.trail.records import SCHEMA_VERSION

        caller = {"machine": wire.machine_id(), "state": os.path.realpath(state_dir()),
                  "zapcli": __version__, "format": SCHEMA_VERSION}
        args = [self.key, str(gen), wire.b64encode(jsonl.dumps(caller)),
                str(float(self.conf.get("pool_idle_s") or DEFAULT_IDLE_S))]
        job = wire.job_id(self.key, gen)
        body = {"entrypoint": wire.entrypoint(self.conf.get("python"), args),
                "submission_id": job, "metadata": {"zapcli_pool": self.key}}
        doc = {"job": job, "gen": gen, "hello": None, "node": None, "old": old}
        self._save(doc)  # first: a submit whose answer is lost is looked up by this name
        try:
            api.post_json(self.addr, "/api/jobs/", body)
        except OSError as exc:  # another process of this caller started it first: fine
            if "already exists" not in api.why(exc) and not (
                    api.answer_lost(exc) and api.job(self.addr, job) is not None):
                raise
        return self._tidy(doc) if old else doc

    def _hello(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Wait for the pool's hello (its first log line); raise when it says
        it cannot run here."""
        give_up = time.monotonic() + HELLO_WAIT_S
        while time.monotonic() < give_up:
            log = api.call(self.addr, "GET", f"/api/jobs/{doc['job']}/logs", timeout=10.0)
            text = log.get("logs", "") if isinstance(log, dict) else str(log)
            hello = wire.hello_of(text)
            if hello is not None:
                if not hello.get("ok"):
                    raise ExecutorError(wire.mismatch(self.addr, hello))
                doc = {**doc, "hello": hello, "node": hello.get("node")}
                self._save(doc)
                return doc
            job = api.job(self.addr, doc["job"]) or {}
            if job.get("status") not in ALIVE_JOB:
                raise ExecutorError(wire.no_python(self.addr, self.conf.get("python"), text, job))
            time.sleep(0.2)
        return doc  # not said yet: the pool may still come up; its work waits for it

    # -- looking at it -----------------------------------------------------------
    def view(self, fresh: bool = False) -> PoolView:
        key = (self.addr, self.key)
        cached = _views.get(key)
        if cached and not fresh and time.monotonic() - cached[0] < STATUS_TTL_S:
            return cached[1]
        doc = self.info()
        view = PoolView()
        seen = _ensured.get(key)
        try:
            if doc.get("node") and (seen is not None and time.monotonic() - seen < ENSURED_TTL_S
                                    or doc.get("hello") and self._seen_lately()):
                job: dict[str, Any] | None = {"status": "RUNNING"}  # a command saw it running just now
            else:
                job = api.job(self.addr, doc["job"]) if doc.get("job") else None
                if job and job.get("status") == "RUNNING" and doc.get("hello"):
                    self._saw()
            view.job = str(job.get("status")) if job else None
            view.message = str((job or {}).get("message") or "")
            node = doc.get("node") or (job or {}).get("driver_node_id")
            text = api.tail(self.addr, node, wire.status_file(self.key), 2) if node and job else None
        except (OSError, ValueError) as exc:
            view.err = api.why(exc)
            text = None
        if text:
            from zapcli.executors.ray_files import read_status_line

            view.doc = read_status_line(text)
            view.current = bool(view.doc and view.doc.get("pool") == doc.get("job"))
        _views[key] = (time.monotonic(), view)
        return view

    # -- handing it work ---------------------------------------------------------
    def submit(self, sid: str, data: bytes) -> str | None:
        """Put the submission; None when it landed, else why its answer was
        lost (then it is kept here, to be submitted again). Raises
        ExecutorError when it surely did not land (refused, no route)."""

        try:
            api.put_package(self.addr, wire.sub_name(self.key, sid), data, timeout=SUBMIT_TIMEOUT_S)
        except (OSError, ValueError) as exc:
            if not api.answer_lost(exc):
                raise ExecutorError(f"the Ray cluster at {self.addr} did not take it ({api.why(exc)})") from None
            _keep(self._file, "pending", sid, data)
            return api.why(exc)
        _keep(self._file, "pending", sid, b"")  # landed; not seen by the pool yet
        return None

    def resubmit(self, sid: str) -> None:
        """Submit again what a lost answer left in doubt (the same key and
        bytes: the pool runs it once however often it lands)."""
        try:
            data = self._file("pending", sid).read_bytes()
        except OSError:
            return
        if data and time.monotonic() - _resubmitted.get(sid, 0.0) > RESUBMIT_EVERY_S:
            _resubmitted[sid] = time.monotonic()
            _quietly(lambda: api.put_package(self.addr, wire.sub_name(self.key, sid), data,
                                             timeout=SUBMIT_TIMEOUT_S))

    def sweep(self) -> None:
        """Forget what this machine kept for subagents that were removed."""
        from zapcli import ids
        from zapcli.trail import store

        for kind in ("cursor", "pending"):
            try:  # ids only: another process's half-written file is not a leftover
                names = [p for p in (self.home / self.key / kind).iterdir()
                         if ids.is_valid(p.name) and not store.exists(p.name)]
            except OSError:
                continue
            for path in names:
                _unlink(path)

    def pending(self, sid: str) -> bool:
        return self._file("pending", sid).exists()

    def confirmed(self, sid: str) -> None:
        _unlink(self._file("pending", sid))

    def put(self, name: str, data: bytes) -> None:
        api.put_package(self.addr, name, data)

    def cursor(self, sid: str) -> int:
        try:
            return int(self._file("cursor", sid).read_text() or 0)
        except (OSError, ValueError):
            return 0

    def set_cursor(self, sid: str, n: int, was: int = 0) -> None:
        """Kept when it can be (else the next look fetches a little more).
        `was`: the cursor this look started from; when there was one and it is
        gone now, another observer brought the rest home and forgot the
        subagent (`done`) meanwhile: not written again."""
        if was > 0 and not self._file("cursor", sid).exists():
            return
        _keep(self._file, "cursor", sid, str(n).encode())

    def done(self, sid: str) -> None:
        """Everything of it is home: the pool may forget it."""
        _unlink(self._file("pending", sid))  # first: nothing may submit it again once it is forgotten
        _unlink(self._file("cursor", sid))

        def tell() -> None:
            self.put(wire.ack_name(self.key, sid), b"{}")
            self.tidy()

        _in_background(tell)

    def frames(self, node: str, sid: str, have: int, total: int) -> list[str]:
        """Frames `have` .. `total`-1 (or more), fetched as the last lines of
        the file on the pool's node."""
        want = max(total - have, 1)
        for _ in range(3):  # more may have been written meanwhile: ask again for enough
            text = api.tail(self.addr, node, wire.frames_file(self.key, sid), want, timeout=30.0) or ""
            lines = text.split("\n")[:-1]  # the last one: unfinished (or the empty rest)
            first = wire.parse_frame(lines[0]) if lines else None
            if first is None or first[0] <= have or len(lines) < want:
                return lines
            want += first[0] - have
        return []


def _keep(file: Any, kind: str, sid: str, data: bytes) -> None:
    """Write one of a subagent's small notes here (its cursor; a submission
    pending, with what to submit again if its answer was lost): 0600, in
    place at once (a temp file renamed), not fsynced — a note lost in a crash
    costs a fetch again. A state folder that cannot take it is no failure."""
    from zapcli.errors import ZapcliError

    try:
        path = file(kind, sid)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except (OSError, ZapcliError):
        pass


def _in_background(fn: Any) -> None:
    """Run `fn` on a thread of its own: what the command is doing need not
    wait for it (telling the pool a subagent is home), but the command
    waits for it before it exits (up to SEND_WAIT_S in all)."""
    import atexit
    import threading

    if not _sending:
        atexit.register(_finish_sending)
    thread = threading.Thread(target=_quietly, args=(fn,), name="ray-ack", daemon=True)
    thread.start()
    _sending.append(thread)


def _finish_sending() -> None:
    give_up = time.monotonic() + SEND_WAIT_S
    for thread in _sending:
        thread.join(max(give_up - time.monotonic(), 0.0))


def _quietly(fn: Any) -> None:
    try:
        fn()
    except (OSError, ValueError):
        pass


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
