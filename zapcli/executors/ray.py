"""The Ray executor: a subagent's runner on a Ray cluster, through the
caller's pool there (docs/explanation/rules.md#remote-execution, docs/explanation/rules.md#fleets-traces-teams).

Imports `zapcli.executors.base`, `ray_api` (the dashboard's HTTP routes,
urllib only), `ray_pool` (the caller's handle on its pool), `ray_collect`,
`ray_wire`, `zapcli.trail`; never `ray` itself: the caller needs no Ray
installed, only the dashboard's address. The cluster side is
`ray_dispatch` (the pool, one Ray job per caller and cluster) and
`ray_node` (its agent on each node, which starts the runners).

- check (spawn): the address answers as a Ray dashboard; the pool runs (it
  is started if need be) and said hello with this zapcli version and trail
  format — else one line and nothing is created; the `ray` settings are
  frozen into the spawn record.
- launch: the caller's `spawn` record (and the values of the variables named
  by `ray.env`) go to the pool as one key named by the subagent id: a retry
  lands on the same key, and the pool runs it once. When the answer is lost
  (timeout, dropped connection) it stays `running`, said so, until the
  pool's status shows it (it is submitted again meanwhile).
- alive: the pool's status line (placing, running, ended, lost with Ray's
  reason); a dead pool is replaced; a restarted cluster (another session)
  has lost it.
- signal: the caller delivered its terminal status first: the node ends the
  runner's tree within the grace; this waits to see it end.
- collect: only the frames past this machine's cursor (`ray_collect`);
  once all of it is home, the pool is told to forget it.
- deliver: one key per record, which the pool hands to the runner's node.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from zapcli.executors import ray_api as api
from zapcli.executors import ray_wire as wire
from zapcli.executors.base import Collected, Executor, ExecutorError, Launched, Liveness, Signalled
from zapcli.executors.ray_pool import HELLO_WAIT_S as HELLO_S
from zapcli.executors.ray_pool import STATUS_TTL_S, Pool
from zapcli.trail import jsonl, reader, store

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

SHIP_MARGIN_S = 3  # the node ships its last frames after the runner ended; the pool ticks


def _spawn_line(sid: str) -> tuple[bytes, dict[str, Any]]:
    line = store.read_bytes(store.path_for(sid)).split(b"\n", 1)[0] + b"\n"
    rec = jsonl.loads(line)
    return line, rec if isinstance(rec, dict) else {}


def _forwarded(env: Mapping[str, str], names: Sequence[Any]) -> dict[str, str]:
    """The values of the variables `ray.env` names, as the caller has them:
    its PYTHONPATH as it set it, not as zapcli's own runner here was started
    (`paths.child_env`); the node's agent does the same for its runner."""
    from zapcli.paths import USER_VARS

    given = {**env, **{name: env[user] for name, user in USER_VARS.items() if user in env}}
    return {n: given[n] for n in names if isinstance(n, str) and n in given}


def _pool(process: Mapping[str, Any]) -> Pool:
    return Pool(str(process.get("address")), {"pool": process.get("pool")})


RAY_KEYS = ("address", "resources", "python", "env", "max_concurrent", "pool_idle_s")


class RayExecutor(Executor):
    name = "ray"
    summary = "a Ray cluster: RAY_ADDRESS or ray.address"
    remote = True
    config_keys = RAY_KEYS
    look_every_s = STATUS_TTL_S  # as fresh as the pool's status line a command keeps

    def check_config(self, value: Any) -> dict[str, Any]:
        """The `ray:` section: address (the dashboard's), resources (Ray's
        entrypoint resources), python (the interpreter on the nodes), env (names
        of variables forwarded to the runner), max_concurrent (a cap of its own),
        pool_idle_s (how long the caller's pool on the cluster stays when idle)."""
        value = super().check_config(value)
        for key, item in value.items():
            if key in ("address", "python") and not (isinstance(item, str) and item.strip()):
                raise ValueError(f"ray.{key}: expected text, got {item!r}")
            if key == "resources" and not (isinstance(item, dict) and all(
                    isinstance(n, str) and isinstance(a, (int, float)) and not isinstance(a, bool)
                    and a >= 0 for n, a in item.items())):
                raise ValueError("ray.resources: expected a mapping of resource name to amount, "
                                 "e.g. {CPU: 1, my_node_type: 1}")
            if key == "env" and not (isinstance(item, list) and all(isinstance(n, str) for n in item)):
                raise ValueError("ray.env: expected a list of environment variable names")
            if key == "max_concurrent" and (isinstance(item, bool) or not isinstance(item, int)
                                            or item < 0):
                raise ValueError(f"ray.max_concurrent: expected a whole number, 0 or more, got {item!r}")
            if key == "pool_idle_s" and (isinstance(item, bool) or not isinstance(item, (int, float))
                                         or not 0 < item < float("inf")):
                raise ValueError(f"ray.pool_idle_s: expected a number of seconds above 0, got {item!r}")
        return value

    # -- spawn ------------------------------------------------------------
    def check(self, options: Mapping[str, Any]) -> dict[str, Any]:
        addr = api.address(options)
        conf = {"address": addr, "resources": dict(options.get("resources") or {}),
                "python": options.get("python"), "env": [str(n) for n in options.get("env") or ()],
                "pool_idle_s": options.get("pool_idle_s")}
        pool = Pool(addr, conf)
        if not pool.info().get("hello"):  # no pool known yet: is it a Ray cluster at all?
            api.version(addr)
        hello = pool.ensure(wait=True).get("hello") or {}
        ray_version, session = hello.get("ray"), hello.get("session")
        if not session:  # the pool has not said hello yet
            ray_version, session = api.version(addr)
        pool.sweep()
        conf.update(pool=pool.key, ray_version=ray_version, session=session)
        return {"ray": conf}

    def launch(self, sid: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
               stderr_path: Path) -> Launched:
        line, rec = _spawn_line(sid)
        conf: dict[str, Any] = rec["ray"] if isinstance(rec.get("ray"), dict) else {}
        addr = str(conf.get("address") or "")
        if not addr or not conf.get("pool"):
            raise ExecutorError("its spawn record names no Ray cluster")
        pool = Pool(addr, conf)
        early = [r for r in reader.read(store.path_for(sid)).records if r.get("type") == "steer"]
        forwarded = _forwarded(env, conf.get("env") or ())
        doc = {"sid": sid, "spawn": wire.b64encode(line), "early": early, "env": forwarded,
               "resources": conf.get("resources") or {}}
        try:  # a queued one: its pool may have ended since the spawn
            pool.ensure(wait=False)
        except ExecutorError:
            pass  # its submission waits in the cluster; an observer starts the pool
        lost = pool.submit(sid, jsonl.dumps(doc))
        fields = {"executor": self.name, "address": addr, "pool": pool.key, "sid": sid,
                  "session": conf.get("session")}
        if lost:
            fields["unconfirmed"] = f"the Ray cluster's answer was lost ({lost})"
            store.append(store.path_for(sid), "diagnostic", {
                "dimension": "executor", "name": "submit",
                "message": f"submitted to the Ray cluster at {addr}, but its answer was lost ({lost}); "
                           "it is looked up (and submitted again under the same key) until the pool "
                           "shows it: until then it is running, not failed"})
        return Launched(fields)

    # -- later ------------------------------------------------------------
    def alive(self, process: Mapping[str, Any]) -> Liveness:
        pool, sid = _pool(process), str(process.get("sid"))
        view = pool.view()
        if view.err is not None:
            return Liveness(None, f"the Ray cluster at {pool.addr} did not answer ({view.err})")
        restarted = _restarted(pool, process)
        if restarted:
            return Liveness(False, restarted)
        entry = view.entry(sid) if view.current else None
        if entry is not None:
            pool.confirmed(sid)
            state = wire.PoolState.parse(entry[0])
            if state in (wire.PoolState.LOST, wire.PoolState.FAILED):  # failed: `collect` records it so
                return Liveness(False, str(entry[2] or "its Ray node died"))
            if state == wire.PoolState.ENDED:
                return Liveness(False, wire.RUNNER_ENDED)
        if view.dead or not view.current:  # its pool ended, or a new one has said nothing yet
            return self._replace(pool, view)
        if entry is not None:
            if state is not None and state.unplaced:  # the cluster has no room for it yet
                return Liveness(True, None, queued=f"ray: placement pending {_pending_s(process)}")
            return Liveness(True, str(entry[2]) if entry[2] else None)  # what holds it up, if anything
        if pool.pending(sid):
            pool.resubmit(sid)
            why = process.get("unconfirmed") or "the pool has not taken it yet"
            return Liveness(None, f"submitted to the Ray cluster at {pool.addr}, not confirmed yet ({why})")
        return Liveness(False, f"the zapcli pool on the Ray cluster at {pool.addr} no longer knows it")

    def _replace(self, pool: Pool, view: Any) -> Liveness:
        if not view.dead:
            return Liveness(None, f"a new zapcli pool is starting on the Ray cluster at {pool.addr}")
        try:
            pool.ensure(wait=False)
        except ExecutorError as exc:
            return Liveness(None, exc.message)
        said = f"{view.job}: {view.message.strip()[:200]}" if view.job else "gone"
        return Liveness(None, f"its zapcli pool on the Ray cluster at {pool.addr} ended ({said}); "
                              "a new one takes over")

    def _wait_ended(self, process: Mapping[str, Any], seconds: float) -> bool:
        pool, sid = _pool(process), str(process.get("sid"))
        give_up = time.monotonic() + seconds
        while True:
            entry = pool.view(fresh=True).entry(sid)
            state = wire.PoolState.parse(entry[0]) if entry is not None else None
            if entry is None or (state is not None and not state.open):
                return True
            if time.monotonic() >= give_up:
                return False
            time.sleep(0.1)

    def signal(self, process: Mapping[str, Any], grace_s: float) -> Signalled:
        """The node ends the runner's tree itself within the grace (it got the
        caller's terminal status through `deliver`): wait to see that."""
        sid = str(process.get("sid"))
        if self.alive(process).alive is not True:
            return Signalled()
        if self._wait_ended(process, grace_s + SHIP_MARGIN_S):
            return Signalled([sid], root_alive=True, how=wire.RUNNER_ENDED)
        return Signalled(root_alive=True, how="stop sent to its Ray node; not ended yet")

    def collect(self, sid: str, process: Mapping[str, Any]) -> Collected | None:
        from zapcli.executors import ray_collect

        pool = _pool(process)
        view = pool.view()
        if view.err is not None:
            return None
        entry = view.entry(sid) if view.current else None
        if entry is None:
            return Collected()
        if wire.PoolState.parse(entry[0]) == wire.PoolState.FAILED:  # it could not start where Ray placed it
            from zapcli.trail import ending
            from zapcli.trail.model import Outcome, Status

            ending.end(store.path_for(sid), Outcome(Status.FAILED, None, str(entry[2])), by="ray")
        have, total = pool.cursor(sid), int(entry[1])
        got = Collected()
        if total > have:
            try:
                lines = pool.frames(str((view.doc or {}).get("node")), sid, have, total)
            except (OSError, ValueError):
                return None
            was = have
            got, have = ray_collect.apply(sid, lines, have)
            if have != was:  # nothing fetched (the pool forgot it meanwhile): no cursor to keep
                pool.set_cursor(sid, have, was)
        if got.ended:
            pool.done(sid)
        return got

    def deliver(self, sid: str, process: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> None:
        pool = _pool(process)
        for rec in records:
            seq = rec.get("seq")
            if not isinstance(seq, int):
                continue
            try:
                pool.put(wire.inbox_name(pool.key, sid, seq), jsonl.dumps(dict(rec)))
            except (OSError, ValueError) as exc:
                raise ExecutorError(f"recorded here, but it could not be sent to the Ray node of {sid} "
                                    f"({api.why(exc)})") from None


def _pending_s(process: Mapping[str, Any]) -> str:
    """How long since it was handed to the pool (`45s`, `3m`)."""
    mono = process.get("mono")
    took = time.monotonic() - mono if isinstance(mono, (int, float)) else 0.0
    took = max(took, 0.0)
    return f"{took:.0f}s" if took < 120 else f"{took / 60:.0f}m"


def _restarted(pool: Pool, process: Mapping[str, Any]) -> str | None:
    """Why its runner is gone when the cluster restarted since its launch
    (its session is another one now); None when it did not."""
    was = process.get("session")
    if not was:
        return None
    view = pool.view()
    now = (view.doc or {}).get("session") if view.current else None
    if now is None and view.job is None:  # no pool job at all: ask the cluster itself
        try:
            now = api.version(pool.addr)[1]
        except ExecutorError:
            return None
    if not now or now == was:
        return None
    return (f"the Ray cluster at {pool.addr} restarted (session {was} is gone, now {now}); "
            "its runner went with it")


def doctor(options: Mapping[str, Any]) -> tuple[str, list[str]]:
    """`zapcli doctor`'s line on the cluster and what is wrong with it: it
    answers, how many nodes are alive, whether one could take
    `ray.resources`; the pool runs there (it is started if need be, so a
    node imports zapcli) with zapcli's version there and here."""
    from zapcli import __version__

    try:
        addr = api.address(options)
        version, _session = api.version(addr)
    except ExecutorError as exc:
        return exc.message, [exc.message]
    try:
        nodes = api.call(addr, "GET", "/api/v0/nodes?limit=1000")["data"]["result"]["result"]
        alive = [n for n in nodes if n.get("state") == "ALIVE"]
        shape = f", {len(alive)} node(s) alive"
    except (OSError, ValueError, KeyError, TypeError):
        alive, shape = [], ""
    wanted = wire.bundle(options.get("resources"))
    problems = []
    if alive and not any(all(n.get("resources_total", {}).get(k, 0) >= v for k, v in wanted.items())
                         for n in alive):
        problems.append(f"no alive node has ray.resources {wanted}: subagents would wait for one")
    try:
        hello = Pool(addr, dict(options)).ensure(wait=True).get("hello")
    except ExecutorError as exc:
        return f"Ray {version} at {addr}{shape}", [*problems, exc.message]
    if not hello:
        problems.append(f"zapcli's pool on the cluster did not start within {HELLO_S:.0f} s")
        return f"Ray {version} at {addr}{shape}", problems
    problems += [f"Ray API: {p}" for p in hello.get("private_api") or ()]
    return (f"Ray {version} at {addr}{shape}; zapcli {hello.get('zapcli')} on the cluster "
            f"({hello.get('python')}), {__version__} here", problems)
