"""The pool: one long-lived Ray job per caller and cluster that runs the
caller's subagents (SPEC §15, §20) — the job's entrypoint.

Imports `ray`, `zapcli.executors.ray_kv` (the private key-value API, in one
place), `ray_node`, `ray_files`, `ray_wire`. Started by the caller with
`python -m zapcli.executors.ray_dispatch KEY GEN CALLER IDLE_S`; it says
hello first (its zapcli version and trail format against the caller's: a
mismatch ends it at once, saying both), then every tick (100 ms):

- reads the caller's keys (`ray_wire`): a new submission gets a placement
  group `zapcli-<id>` with its `ray.resources` as the bundle, so Ray's
  scheduler decides the node (no worker process is held for it);
- once placed, claims the run key `zapcli/K/run/<id>` (atomic: it is
  dispatched once, whichever pool sees it) and asks that node's agent
  (`ray_node.NodeAgent`, an actor per node) to start the runner;
- asks each node's agent what its runners wrote and appends it as frames;
  records for a runner (`send`, approvals, a cancel) go to its agent;
- on a node's death its subagents are `lost` with Ray's reason; an ended
  runner's placement group is removed at once (its resources are free, and
  a cancelled one is stopped on the Ray side too); an acknowledged one (all
  of it came home) loses every Ray-side trace: keys, group, frames file;
- writes a status line on every change, and ends itself once nothing has
  been open for IDLE_S.

Replacing a dead pool loses and repeats nothing: submissions wait in the
key-value store; run keys say what was dispatched where; runners outlive
their agent (see `ray_node`), and the next pool's agents adopt them from
their node trails; frames files say how far each was shipped.
"""

from __future__ import annotations

import base64
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from zapcli.executors import ray_kv as kv
from zapcli.executors import ray_wire as wire
from zapcli.executors.ray_files import Frames, StatusFile

TICK_S = 0.1
QUIET_TICK_S, QUIET_AFTER_S = 0.5, 5.0  # nothing open for a while: look less often
CALL_TIMEOUT_S = 10.0


@dataclass
class Sub:
    sid: str
    spec: dict[str, Any]
    frames: Frames
    state: wire.PoolState = wire.PoolState.SUBMITTED
    node: str | None = None
    pg: Any = None
    start_ref: Any = None
    reason: str | None = None
    inbox: dict[int, str] = field(default_factory=dict)  # seq -> stored key
    early: list[int] = field(default_factory=list)  # inbox seqs that went with its start


class Pool:
    def __init__(self, key: str, gen: int, caller: dict[str, Any], idle_s: float, context: Any):
        import ray

        self.key, self.gen, self.caller, self.idle_s = key, gen, caller, idle_s
        self.dir = kv.logs_dir(context) / wire.files_dir(key)
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # trails' content: this user's only
        self.node = ray.get_runtime_context().get_node_id()
        self.session = str(context.address_info["session_dir"]).rstrip("/").rsplit("/", 1)[-1]
        self.status = StatusFile(self.dir / "status")
        self.subs: dict[str, Sub] = {}
        self.agents: dict[str, Any] = {}
        self.reports: dict[str, tuple[Any, list[str]]] = {}  # node -> (ref, sids)
        self.last_busy = time.monotonic()
        self.dirty = True

    # -- the loop -----------------------------------------------------------
    def run(self) -> None:
        while True:
            busy = self.tick()
            now = time.monotonic()
            if busy or any(s.state.open for s in self.subs.values()):
                self.last_busy = now
            elif now - self.last_busy > self.idle_s:
                self.write_status(closed=True)
                return
            time.sleep(TICK_S if now - self.last_busy < QUIET_AFTER_S else QUIET_TICK_S)

    def tick(self) -> bool:
        busy = self.scan()
        self.place()
        self.check_starts()
        self.check_reports()
        self.ask_reports()
        busy = self.deliver() or busy
        if self.dirty:
            self.write_status()
        return busy

    def write_status(self, closed: bool = False) -> None:
        from zapcli import __version__

        self.dirty = False
        self.status.write({
            "v": wire.PROTOCOL, "pool": wire.job_id(self.key, self.gen), "gen": self.gen,
            "node": self.node, "session": self.session, "zapcli": __version__, "closed": closed,
            "subs": {s.sid: [s.state.value, s.frames.n, s.reason] for s in self.subs.values()}})

    # -- submissions and acknowledgements -------------------------------------
    def scan(self) -> bool:
        """Read the caller's keys; True when any asked for work."""
        busy = False
        for stored in kv.kv_list(wire.kv_prefix(self.key)):
            parsed = wire.parse_kv(self.key, stored)
            if parsed is None:
                continue
            kind, sid, seq = parsed
            if kind == "sub" and sid not in self.subs:
                busy = self.admit(sid, stored) or busy
            elif kind == "in" and sid in self.subs:
                self.subs[sid].inbox.setdefault(seq, stored)
            elif kind == "ack":
                self.forget(sid)
                busy = True
        return busy

    def admit(self, sid: str, stored: str) -> bool:
        raw = kv.kv_get(stored)
        try:
            spec = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            spec = None
        if not isinstance(spec, dict):
            return False
        sub = Sub(sid, spec, Frames(self.dir / f"{sid}.frames").recover())
        self.subs[sid] = sub
        self.dirty = True
        marker = kv.kv_get(wire.run_key(self.key, sid))
        if sub.frames.ended:  # a replaced pool shipped all of it already
            sub.state = wire.PoolState.ENDED
        elif marker:  # dispatched by an earlier pool: its node's agent knows the rest
            sub.node = orjson.loads(marker)["node"]
            sub.state = wire.PoolState.RUNNING
        return True

    def forget(self, sid: str) -> None:
        """All of it came home: remove every trace of it on the Ray side."""
        sub = self.subs.pop(sid, None)
        self.dirty = True
        if sub is not None:
            self.remove_pg(sub)
            sub.frames.remove()
            keys = list(sub.inbox.values())
        else:
            Frames(self.dir / f"{sid}.frames").remove()
            keys = [k for k in kv.kv_list(wire.kv_prefix(self.key) + f"in_{sid}_")]
        for k in (*keys, "gcs://" + wire.sub_name(self.key, sid), wire.run_key(self.key, sid),
                  "gcs://" + wire.ack_name(self.key, sid)):
            kv.kv_del(k)

    # -- placement and start --------------------------------------------------
    def place(self) -> None:
        from ray.util.placement_group import placement_group_table

        for sub in list(self.subs.values()):
            if sub.state == wire.PoolState.SUBMITTED:
                bundle = wire.bundle(sub.spec.get("resources"))
                if not bundle:  # no reservation asked: the pool's own node
                    self.dispatch(sub, self.node)
                    continue
                sub.pg = _placement_group(sub.sid, bundle)
                sub.state, self.dirty = wire.PoolState.PLACING, True
            if sub.state == wire.PoolState.PLACING and sub.pg.wait(0):
                self.dispatch(sub, placement_group_table(sub.pg)["bundles_to_node_id"][0])

    def dispatch(self, sub: Sub, node: str) -> None:
        """Start it on `node` — unless an earlier pool dispatched it (the run
        key is claimed once): then on that one's node, never anywhere else."""
        if not kv.kv_claim(wire.run_key(self.key, sub.sid), orjson.dumps({"node": node, "gen": self.gen})):
            node = orjson.loads(kv.kv_get(wire.run_key(self.key, sub.sid)) or b"{}").get("node", node)
        sub.node, sub.state, self.dirty = node, wire.PoolState.STARTING, True
        spec = dict(sub.spec)
        spec["early"] = list(spec.get("early") or ()) + self.take_early(sub)
        sub.start_ref = self.agent(node).start.remote(sub.sid, spec)

    def take_early(self, sub: Sub) -> list[dict[str, Any]]:
        """Records the caller sent before it started: they go with the start."""
        out = []
        sub.early = sorted(sub.inbox)
        for seq in sub.early:
            raw = kv.kv_get(sub.inbox[seq])
            if raw:
                out.append(orjson.loads(raw))
        return out

    def check_starts(self) -> None:
        import ray

        waiting = {s.start_ref: s for s in self.subs.values() if s.state == wire.PoolState.STARTING and s.start_ref}
        if not waiting:
            return
        ready, _ = ray.wait(list(waiting), num_returns=len(waiting), timeout=0)
        for ref in ready:
            sub = waiting[ref]
            sub.start_ref = None
            try:
                got = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - the agent or its node died
                self.agent_failed(sub.node or "", exc)
                if sub.state == wire.PoolState.STARTING:  # its node lives: its (new) agent starts or adopts it
                    sub.state = wire.PoolState.RUNNING
                continue
            if got.get("ok"):
                sub.state, self.dirty = wire.PoolState.RUNNING, True
                for seq in sub.early:  # they went with the start
                    kv.kv_del(sub.inbox.pop(seq))
                sub.early = []
            else:
                self.refuse(sub, str(got.get("reason")))

    def refuse(self, sub: Sub, reason: str) -> None:
        """It cannot run where Ray placed it: it fails, saying why (the
        caller records that)."""
        sub.frames.add({}, wire.EndHow.UNSTARTED)
        sub.state, sub.reason, self.dirty = wire.PoolState.FAILED, reason, True
        self.remove_pg(sub)

    # -- agents and reports -----------------------------------------------------
    def agent(self, node: str) -> Any:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from zapcli.executors.ray_node import NodeAgent

        if node not in self.agents:
            self.agents[node] = ray.remote(NodeAgent).options(
                name=f"agent-{node[:16]}", get_if_exists=True, num_cpus=0, max_concurrency=16,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(self.caller)
        return self.agents[node]

    def ask_reports(self) -> None:
        by_node: dict[str, dict[str, list[int]]] = {}
        for sub in self.subs.values():
            if sub.state == wire.PoolState.RUNNING and sub.node and sub.node not in self.reports:
                by_node.setdefault(sub.node, {})[sub.sid] = list(sub.frames.offs)
        for node, wants in by_node.items():
            self.reports[node] = (self.agent(node).report.remote(wants), list(wants))

    def check_reports(self) -> None:
        import ray

        if not self.reports:
            return
        refs = {ref: node for node, (ref, _) in self.reports.items()}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        for ref in ready:
            node = refs[ref]
            self.reports.pop(node)
            try:
                got = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - the agent or its node died
                self.agent_failed(node, exc)
                continue
            for sid, item in got.items():
                if sid in self.subs:
                    self.take_report(self.subs[sid], item)

    def take_report(self, sub: Sub, item: dict[str, Any]) -> None:
        if wire.NodeState.parse(item.get("state")) == wire.NodeState.UNSTARTED:  # dispatched, but its start never got made
            self.dispatch(sub, sub.node or self.node)
            return
        sub.frames.add(item, item.get("end"))
        if item.get("end") or any(k in item for k in "toe"):
            self.dirty = True
        if item.get("end"):
            sub.state = wire.PoolState.ENDED
            self.remove_pg(sub)

    def agent_failed(self, node: str, exc: BaseException) -> None:
        """A call to `node`'s agent failed: its node died (its subagents are
        lost, with Ray's reason) or only the agent did (a new one adopts)."""
        import ray

        self.agents.pop(node, None)
        self.reports.pop(node, None)
        info = next((n for n in ray.nodes() if n.get("NodeID") == node), None)
        if info is not None and info.get("Alive"):
            why = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            if "ModuleNotFoundError" in str(exc) or "ImportError" in str(exc):
                for sub in self.subs.values():
                    if sub.node == node and sub.state == wire.PoolState.STARTING:
                        self.refuse(sub, f"Ray's workers on node {node[:12]} cannot run zapcli: {why}")
            return
        said = (info or {}).get("DeathReasonMessage") or "it is gone from the cluster"
        for sub in self.subs.values():
            if sub.node == node and sub.state.open:
                sub.state, sub.reason = wire.PoolState.LOST, f"its Ray node died ({str(said)[:300]})"
                self.remove_pg(sub)
        self.dirty = True

    # -- records from the caller ---------------------------------------------------
    def deliver(self) -> bool:
        """Hand records to running runners; a cancel of one not started yet
        ends it where it waits. True when anything was handled."""
        import ray

        from zapcli.trail.model import is_terminal

        busy = False
        for sub in self.subs.values():
            for seq in sorted(sub.inbox):
                raw = kv.kv_get(sub.inbox[seq])
                rec = orjson.loads(raw) if raw else None
                if sub.state.unplaced and isinstance(rec, dict) and \
                        rec.get("type") == "status" and is_terminal(rec.get("status")):
                    sub.frames.add({}, wire.EndHow.UNSTARTED)
                    sub.state, sub.reason, self.dirty = wire.PoolState.ENDED, "cancelled before it started", True
                    self.remove_pg(sub)
                if sub.state != wire.PoolState.RUNNING and sub.state.open:
                    break  # it takes them when it starts
                if sub.state == wire.PoolState.RUNNING and isinstance(rec, dict):
                    if rec.get("type") == "status" and is_terminal(rec.get("status")):
                        sub.reason, self.dirty = f"{rec.get('status')} by the caller", True
                    try:
                        if not ray.get(self.agent(sub.node or "").deliver.remote(sub.sid, rec),
                                       timeout=CALL_TIMEOUT_S):
                            break
                    except Exception as exc:  # noqa: BLE001 - kept: tried again next tick
                        self.agent_failed(sub.node or "", exc)
                        break
                kv.kv_del(sub.inbox.pop(seq))
                busy = True
        return busy

    def remove_pg(self, sub: Sub) -> None:
        from ray.util.placement_group import remove_placement_group

        pg, sub.pg = sub.pg or _existing_pg(sub.sid), None
        if pg is not None:
            try:
                remove_placement_group(pg)
            except Exception:  # noqa: BLE001 - already removed
                pass


def _existing_pg(sid: str) -> Any:
    from ray.util.placement_group import get_placement_group

    try:
        return get_placement_group(wire.pg_name(sid))
    except ValueError:
        return None


def _placement_group(sid: str, bundle: dict[str, float]) -> Any:
    """Its placement group: an earlier pool's, or a new one (detached: it
    outlives this job, so a replaced pool does not free what a runner holds)."""
    from ray.util.placement_group import placement_group

    return _existing_pg(sid) or placement_group([bundle], name=wire.pg_name(sid), lifetime="detached")


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        sys.stderr.write("usage: python -m zapcli.executors.ray_dispatch KEY GEN CALLER IDLE_S\n")
        return 2
    import ray

    key, gen, caller = argv[0], int(argv[1]), orjson.loads(base64.b64decode(argv[2]))
    from zapcli.executors.ray_node import pool_hello

    context = ray.init(address="auto", namespace=wire.namespace(key), log_to_driver=False)
    said = pool_hello(context, caller)
    sys.stdout.write(wire.HELLO + orjson.dumps(said).decode() + "\n")
    sys.stdout.flush()
    if not said["ok"]:
        return 3
    Pool(key, gen, caller, float(argv[3]), context).run()
    return 0


if __name__ == "__main__":
    from zapcli import keyguard

    keyguard.seal()  # a long-lived job that carries its subagents' environments: out of reach
    sys.exit(main(sys.argv[1:]))
