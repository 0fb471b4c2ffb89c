"""What the caller and the cluster side of the Ray executor say to each other:
the names of the pool's keys, files and Ray objects, the frame and status
line formats, and who a caller is.

Imports the standard library only: both sides use it (the caller never
imports `ray`; the cluster side, `ray_dispatch` and `ray_node`, does).

One pool per caller and cluster (a caller is a state folder on a machine),
its key `K` a hash of the three:

- the pool job `zapcli-pool-K-<gen>` (a new generation replaces a dead one),
  Ray namespace `zapcli-K`; one placement group `zapcli-<id>` per subagent;
- keys the caller writes through the dashboard (they land in the cluster's
  key-value store as `gcs://NAME`): `zapcli_K_sub_<id>.json` (what to run),
  `zapcli_K_in_<id>_<seq>.json` (a record for its runner: steer, approval
  decision, cancel), `zapcli_K_ack_<id>.json` (everything came home: tidy up);
- keys only the pool writes: `zapcli/K/run/<id>` (dispatched to that node,
  never again anywhere else);
- files the pool writes in its node's Ray log folder, which the dashboard
  serves: `zapcli/K/status` (one JSON line per change; the last one counts)
  and `zapcli/K/<id>.frames`, one frame per line:
  `<n> <t|o|e> <offset> <base64>` (trail records, stdout, stderr bytes at
  the node's offsets) and last `<n> end <recorded|unrecorded|unstarted>`.

The pool job's command (`entrypoint`) and its first log line, the hello
(`hello_of`), are here too, with what the caller says when the hello is
not what it needs (`mismatch`, `no_python`).
"""

from __future__ import annotations

import binascii
import os
import sys
from enum import Enum

from zapcli.selfexec import python_c_any, python_m_any

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 1  # the pool's status line and frames; bumped on an incompatible change


class _Word(str, Enum):
    """A word of the wire: compares, hashes and formats as its string value
    (as `trail.model.Status` does), so a status line read back as plain JSON
    strings and the members agree."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:
        return hash(self.value)

    @classmethod
    def parse(cls, value: object) -> Any:
        """The member named `value`, or None for anything else (a newer
        pool's word, a damaged line)."""
        try:
            return cls(value)
        except ValueError:
            return None


class PoolState(_Word):
    """A subagent's state in the pool, as its status line says it: submitted
    (its key is read), placing (its placement group is being made), starting
    (sent to its node's agent), running, then ended (its runner ended on the
    node), failed (it could not start where Ray placed it) or lost (its node
    died)."""

    SUBMITTED = "submitted"
    PLACING = "placing"
    STARTING = "starting"
    RUNNING = "running"
    ENDED = "ended"
    FAILED = "failed"
    LOST = "lost"

    @property
    def open(self) -> bool:
        """Its runner may still run (or is still to start)."""
        return self in _OPEN

    @property
    def unplaced(self) -> bool:
        """Ray has not placed it yet: submitted or placing."""
        return self in (PoolState.SUBMITTED, PoolState.PLACING)


_OPEN = frozenset({PoolState.SUBMITTED, PoolState.PLACING, PoolState.STARTING, PoolState.RUNNING})


RUNNER_ENDED = "its runner ended on its Ray node"  # what an ended runner's status and collection say


class EndHow(_Word):
    """How a frames file ends (`<n> end <how>`): the runner recorded its end,
    ended without recording it, or never started on the node."""

    RECORDED = "recorded"
    UNRECORDED = "unrecorded"
    UNSTARTED = "unstarted"


class NodeState(_Word):
    """A subagent as a node's agent reports it to the pool: nothing of it on
    the node yet, its runner running, or ended."""

    UNSTARTED = "unstarted"
    RUNNING = "running"
    ENDED = "ended"


STATES = tuple(PoolState)
OPEN_STATES = tuple(s for s in PoolState if s.open)
END_HOWS = tuple(EndHow)
HELLO = "ZAPCLI1 hello "  # the pool's first line in its job log


def pool_key(state_dir: str, address: str) -> str:
    """The caller's pool on this cluster: machine, state folder, address."""
    raw = "\0".join((machine_id(), os.path.realpath(state_dir), address.rstrip("/")))
    return _sha256(raw.encode())[:12]


def _sha256(data: bytes) -> str:
    """hashlib.sha256(data).hexdigest() — through CPython's own sha256 where
    it has one: `hashlib` loads OpenSSL's, in every command that asks a cluster."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # 3.12 on
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef]  # 3.10, 3.11
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment]
    return str(sha256(data).hexdigest())


_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def b64encode(data: bytes) -> str:
    """base64.b64encode(data).decode(), without `base64` (it brings `re` and `struct`)."""
    return binascii.b2a_base64(data, newline=False).decode()


def b64decode(text: str) -> bytes:
    """base64.b64decode(text, validate=True): ValueError for anything but
    the alphabet with its padding."""
    body = text.rstrip("=")
    if len(text) - len(body) > 2 or not set(body) <= _B64:
        raise ValueError("not base64")
    return binascii.a2b_base64(text)


def machine_id() -> str:
    """This machine's id (systemd's machine-id), else its host name."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, encoding="ascii") as f:
                text = f.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            return text
    import socket

    return socket.gethostname()


def namespace(key: str) -> str:
    return f"zapcli-{key}"


def job_id(key: str, gen: int) -> str:
    return f"zapcli-pool-{key}-{gen}"


def pg_name(sid: str) -> str:
    return f"zapcli-{sid}"


def sub_name(key: str, sid: str) -> str:
    return f"zapcli_{key}_sub_{sid}.json"


def inbox_name(key: str, sid: str, seq: int) -> str:
    return f"zapcli_{key}_in_{sid}_{seq:09d}.json"


def ack_name(key: str, sid: str) -> str:
    return f"zapcli_{key}_ack_{sid}.json"


def kv_prefix(key: str) -> str:
    """Every key the caller writes for pool `key`, as stored (`gcs://` + name)."""
    return f"gcs://zapcli_{key}_"


def parse_kv(key: str, stored: str) -> tuple[str, str, int] | None:
    """(kind, sid, seq) of a stored caller key: kind sub, in or ack."""
    rest = stored[len(kv_prefix(key)):] if stored.startswith(kv_prefix(key)) else ""
    if not rest.endswith(".json"):
        return None
    kind, _, tail = rest[:-5].partition("_")
    if kind in ("sub", "ack") and tail.startswith("sa_"):
        return kind, tail, 0
    if kind == "in":
        sid, _, seq = tail.rpartition("_")
        if sid.startswith("sa_") and seq.isdigit():
            return kind, sid, int(seq)
    return None


def run_key(key: str, sid: str) -> str:
    return f"zapcli/{key}/run/{sid}"


def files_dir(key: str) -> str:
    """The pool's folder in its node's Ray log folder (relative to it)."""
    return f"zapcli/{key}"


def status_file(key: str) -> str:
    return f"{files_dir(key)}/status"


def frames_file(key: str, sid: str) -> str:
    return f"{files_dir(key)}/{sid}.frames"


def frame(n: int, stream: str, offset: int, data: bytes) -> str:
    return f"{n} {stream} {offset} {b64encode(data)}\n"


def end_frame(n: int, how: str) -> str:
    return f"{n} end {how}\n"


def parse_frame(line: str) -> tuple[int, str, int, bytes] | tuple[int, str, str] | None:
    """(n, stream, offset, data), (n, "end", how), or None for a damaged or
    unfinished line."""
    parts = line.rstrip("\n").split(" ")
    if len(parts) == 3 and parts[1] == "end" and parts[0].isdigit() and EndHow.parse(parts[2]):
        return int(parts[0]), "end", EndHow(parts[2])
    if len(parts) != 4 or not parts[0].isdigit() or parts[1] not in ("t", "o", "e") or not parts[2].isdigit():
        return None
    try:
        data = b64decode(parts[3])
    except ValueError:
        return None
    return int(parts[0]), parts[1], int(parts[2]), data


def bundle(resources: dict[str, float] | None) -> dict[str, float]:
    """`ray.resources` as a placement group bundle (zeros dropped); nothing
    given means one CPU, as for a Ray task. Empty when every amount is 0:
    then it runs on the pool's node without a reservation."""
    if not resources:
        return {"CPU": 1.0}
    return {str(k): float(v) for k, v in resources.items() if float(v) > 0}


NO_PYTHON = "ZAPCLI1 nopython"  # a candidate Python that cannot import zapcli and ray, in the job's log


def entrypoint(python: str | None, args: list[str]) -> str:
    """The pool job's command: the first of the candidate Pythons that
    imports zapcli and finds ray runs the dispatcher (which imports ray: the
    probe does not, ~0.6 s of CPU a pool start saved); if none does, each
    one's complaint at importing both goes to the job's log (`no_python`
    reads it; the dispatcher says the same of a ray found that does not
    import). Neither the probes nor the dispatcher has the job's working
    folder on its module path (docs/explanation/security.md): the nodes'
    Pythons may predate `-P`."""
    cands = [python] if python else [sys.executable, "python3", "python"]
    import shlex  # only where a pool is submitted: other commands are spared `re`

    quoted = " ".join(shlex.quote(c) for c in cands)
    tail = " ".join(shlex.quote(a) for a in args)
    probe = " ".join(['"$p"', *map(shlex.quote, python_c_any(
        "import zapcli, importlib.util as u\nif u.find_spec('ray') is None: raise SystemExit(1)",
        python="")[1:])])
    said = " ".join(['"$p"', *map(shlex.quote, python_c_any("import zapcli, ray", python="")[1:])])
    run = " ".join(['"$p"', *map(shlex.quote, python_m_any("zapcli.executors.ray_dispatch",
                                                             python="")[1:])])
    return (f"for p in {quoted}; do if {probe} >/dev/null 2>&1; then exec {run} {tail}; fi; done; "
            f"for p in {quoted}; do echo \"{NO_PYTHON} $p: $({said} 2>&1 | tail -n 1)\"; "
            f"done; exit 3")


def hello_of(log: str) -> dict[str, Any] | None:
    import json

    for line in log.splitlines():
        if line.startswith(HELLO):
            try:
                doc = json.loads(line[len(HELLO):])
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def mismatch(addr: str, hello: dict[str, Any]) -> str:
    from zapcli import __version__
    from zapcli.trail.records import SCHEMA_VERSION

    return (f"zapcli {hello.get('zapcli')} (trail format {hello.get('format')}) is installed on the "
            f"Ray cluster at {addr} ({hello.get('python')}), zapcli {__version__} (trail format "
            f"{SCHEMA_VERSION}) here: install the same version on both")


def no_python(addr: str, python: str | None, log: str, job: dict[str, Any]) -> str:
    said = [ln.split(" ", 2)[2] for ln in log.splitlines() if ln.startswith(NO_PYTHON + " ")]
    if python and len(said) == 1 and said[0].startswith(f"{python}: "):
        said = [said[0][len(python) + 2:]]
    if not said:
        return (f"the zapcli pool on the Ray cluster at {addr} ended before it started "
                f"({job.get('status')}: {str(job.get('message') or '').strip()[:200]})")
    which = f"ray.python ({python})" if python else "this Python's path, python3 and python"
    return (f"on the Ray cluster at {addr}, {which} cannot import zapcli and ray ({'; '.join(said)[:300]}): "
            "set ray.python in config.yaml to the Python of the nodes' environment where "
            "'zapcli[ray]' is installed, e.g. /opt/venv/bin/python")
