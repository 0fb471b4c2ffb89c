"""The pool: one long-lived Ray job per caller and cluster that runs the
caller's subagents (docs/explanation/rules.md#remote-execution, docs/explanation/rules.md#fleets-traces-teams) — the job's entrypoint.

Imports `ray`, `zapcli.executors.ray_kv` (the private key-value API, in one
place), `ray_agents` (the agent of each node), `ray_place` (placement
groups), `ray_files`, `ray_wire`. Started by the caller with
`python -m zapcli.executors.ray_dispatch KEY GEN CALLER IDLE_S`; it says
hello first (its zapcli version and trail format against the caller's: a
mismatch ends it at once, saying both), then every tick (at most 100 ms
apart; sooner when an answer it waits for comes: a start, or a node's
report, which its agent holds until it has something to say):

- reads the caller's keys (`ray_wire`): a new submission gets a placement
  group (`ray_place`), so Ray's scheduler decides the node;
- once placed, claims the run key `zapcli/K/run/<id>` (atomic: it is
  dispatched once, whichever pool sees it) and asks that node's agent
  (`ray_node.NodeAgent`, an actor per node) to start the runner;
- asks each node's agent what its runners wrote and appends it as frames;
  records for a runner (`send`, approvals, a cancel) go to its agent;
- on a node's death its subagents are `lost` with Ray's reason; an ended
  one's placement group is removed, always through `ray_place.Doomed`, which
  never removes one Ray may be preparing (one cancelled while Ray places it
  waits until it is placed); an acknowledged one (all of it came home)
  loses every Ray-side trace: keys, group, frames file;
- writes a status line on every change; ends once nothing was open, and no
  group was left to remove, for IDLE_S.

Exactly once, whatever Ray retries: Ray retries nothing of the pool's (its
agents have `ray_agents.NO_RETRIES`; a job is never resubmitted by Ray),
and what the pool does again is safe: a runner claims its trail, so a
second launch refuses to run, and an agent adopts a runner launched but not
recorded. When Ray's memory monitor kills an agent (`memory_killed`), the
reason names what Ray did; a start it killed is settled by the next report
(its runner started: adopted; else it fails, never started again).

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
from zapcli.executors import ray_place as place
from zapcli.executors import ray_wire as wire
from zapcli.executors.ray_agents import NOT_AGAIN, OOM_GIVE_UP, Agents, node_info, oom_words
from zapcli.executors.ray_files import Frames, StatusFile

TICK_S = 0.1
QUIET_TICK_S, QUIET_AFTER_S = 0.5, 5.0  # nothing open for a while: look less often
MIN_TICK_S = 0.01  # answers that come back to back are taken together
HOLD_S = 0.5  # how long a node's agent holds a report with nothing to say (ray_node)
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
    note: str | None = None  # what holds a live one up (its node's agent was killed), for the caller
    killed: str | None = None  # Ray killed the agent while it started this one: a report says if it ran
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
        self.agents = Agents(caller)
        self.doomed = place.Doomed()  # groups to remove, each once no bundle of it is being prepared
        self.reports: dict[str, tuple[Any, list[str]]] = {}  # node -> (ref, sids)
        self.starts: dict[str, int] = {}  # node -> its agent's count of starts in the last answer taken
        self.last_busy = time.monotonic()
        self.dirty = True

    # -- the loop -----------------------------------------------------------
    def run(self) -> None:
        while True:
            began = time.monotonic()
            busy = self.tick()
            now = time.monotonic()
            if busy or self.doomed or any(s.state.open for s in self.subs.values()):
                self.last_busy = now
            elif now - self.last_busy > self.idle_s:
                self.write_status(closed=True)
                return
            self.pause(began, TICK_S if now - self.last_busy < QUIET_AFTER_S else QUIET_TICK_S)

    def pause(self, began: float, most: float) -> None:
        """Until the next tick: `most` seconds, or less once an answer the
        tick takes is in (a start, a report); never under MIN_TICK_S from
        the start of the last tick. Not a placement: a group placed for a
        node whose agent is paused would wake every tick."""
        import ray

        refs = [ref for ref, _ in self.reports.values()]
        refs += [s.start_ref for s in self.subs.values() if s.state == wire.PoolState.STARTING and s.start_ref]
        if refs:
            ray.wait(refs, num_returns=1, timeout=most, fetch_local=False)
        else:
            time.sleep(most)
        rest = began + MIN_TICK_S - time.monotonic()
        if rest > 0:
            time.sleep(rest)

    def tick(self) -> bool:
        busy = self.scan()
        busy = self.deliver() or busy  # first: one cancelled before it was placed gets no group
        self.place()
        self.check_starts()
        self.check_reports()
        self.ask_reports()
        self.doomed.tick()
        if self.dirty:
            self.write_status()
        return busy

    def write_status(self, closed: bool = False) -> None:
        from zapcli import __version__

        self.dirty = False
        self.status.write({
            "v": wire.PROTOCOL, "pool": wire.job_id(self.key, self.gen), "gen": self.gen,
            "node": self.node, "session": self.session, "zapcli": __version__, "closed": closed,
            "subs": {s.sid: [s.state.value, s.frames.n, s.reason or s.note] for s in self.subs.values()}})

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
        made: list[Sub] = []
        for sub in list(self.subs.values()):
            if sub.state == wire.PoolState.SUBMITTED:
                bundle = wire.bundle(sub.spec.get("resources"))
                if not bundle:  # no reservation asked: the pool's own node
                    self.dispatch(sub, self.node)
                    continue
                sub.pg = place.make(sub.sid, bundle)
                sub.state, self.dirty = wire.PoolState.PLACING, True
                made.append(sub)
        placing = [s for s in self.subs.values() if s.state == wire.PoolState.PLACING]
        for sub in place.placed(placing, settle=bool(made)):
            self.dispatch(sub, place.node_of(sub.pg))

    def dispatch(self, sub: Sub, node: str) -> None:
        """Start it on `node` — unless an earlier pool dispatched it (the run
        key is claimed once): then on that one's node, never anywhere else.
        Not while that node's agent is paused (Ray's memory monitor killed it)."""
        if not kv.kv_claim(wire.run_key(self.key, sub.sid), orjson.dumps({"node": node, "gen": self.gen})):
            node = orjson.loads(kv.kv_get(wire.run_key(self.key, sub.sid)) or b"{}").get("node", node)
        if self.agents.paused(node):  # claimed for it all the same: asked again next tick
            return
        sub.node, sub.state, self.dirty = node, wire.PoolState.STARTING, True
        spec = dict(sub.spec)
        spec["early"] = list(spec.get("early") or ()) + self.take_early(sub)
        sub.start_ref = self.agents.get(node).start.remote(sub.sid, spec)

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
                if sub.state == wire.PoolState.STARTING and not sub.killed:  # its node lives: its (new) agent
                    sub.state = wire.PoolState.RUNNING  # starts or adopts it
                continue
            if got.get("ok"):
                if sub.node:
                    self.starts[sub.node] = max(self.starts.get(sub.node, 0), int(got.get("starts") or 0))
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
    def ask_reports(self) -> None:
        by_node: dict[str, dict[str, list[int]]] = {}
        for sub in self.subs.values():
            asks = sub.state == wire.PoolState.RUNNING or (
                sub.state == wire.PoolState.STARTING and sub.killed and not sub.start_ref)
            if asks and sub.node and sub.node not in self.reports and not self.agents.paused(sub.node):
                by_node.setdefault(sub.node, {})[sub.sid] = list(sub.frames.offs)
        for node, wants in by_node.items():
            self.reports[node] = (self.agents.get(node).report.remote(wants, HOLD_S, self.starts.get(node, 0)),
                                  list(wants))

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
            self.agents.answered(node)
            for sid, item in got.items():
                if sid in self.subs:
                    self.take_report(self.subs[sid], item)

    def take_report(self, sub: Sub, item: dict[str, Any]) -> None:
        if wire.NodeState.parse(item.get("state")) == wire.NodeState.UNSTARTED:  # dispatched, but its start never got made
            if sub.killed:  # by Ray's memory monitor: it is never started again
                self.refuse(sub, f"{sub.killed} while it started this subagent: {NOT_AGAIN}")
                return
            self.dispatch(sub, sub.node or self.node)
            return
        if sub.state == wire.PoolState.STARTING:  # its start was killed after all of it was done: adopted
            sub.state, sub.killed, self.dirty = wire.PoolState.RUNNING, None, True
        if sub.note:
            sub.note, self.dirty = None, True
        sub.frames.add(item, item.get("end"))
        if item.get("end") or any(k in item for k in "toe"):
            self.dirty = True
        if item.get("end"):
            sub.state = wire.PoolState.ENDED
            self.remove_pg(sub)

    def agent_failed(self, node: str, exc: BaseException) -> None:
        """A call to `node`'s agent failed: its node died (its subagents are
        lost, with Ray's reason) or only the agent did (a new one adopts)."""
        first = self.agents.drop(node)
        self.reports.pop(node, None)
        self.starts.pop(node, None)  # a new agent counts from 0
        info = node_info(node)
        if info is not None and info.get("Alive"):
            killed = oom_words(exc, node)
            if killed:  # every call in flight to that agent fails: its death is counted once
                self.memory_killed(node, killed, again=not first)
                return
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

    def memory_killed(self, node: str, why: str, again: bool = False) -> None:
        """Ray's memory monitor killed `node`'s agent: a start in flight is
        settled by the next report, or given up after OOM_GIVE_UP kills in a
        row; running ones go on, saying why nothing comes home meanwhile."""
        kills, pause = self.agents.memory_killed(node, why, again)
        self.dirty = True
        for sub in self.subs.values():
            if sub.node != node:
                continue
            if sub.state == wire.PoolState.STARTING:
                sub.killed = sub.killed or why
                sub.note = f"{why}; whether its runner started is asked again in {pause:.0f}s"
                if kills >= OOM_GIVE_UP and not sub.start_ref:
                    self.refuse(sub, f"{why}, {kills} times in a row, while it started this "
                                     f"subagent: {NOT_AGAIN}")
            elif sub.state == wire.PoolState.RUNNING:
                sub.note = (f"{why}; its runner goes on there, and what it writes comes home once "
                            "zapcli's agent runs there again")

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
                    self.remove_pg(sub)  # once Ray has placed it (place.Doomed)
                if sub.state != wire.PoolState.RUNNING and sub.state.open:
                    break  # it takes them when it starts
                if sub.state == wire.PoolState.RUNNING and self.agents.paused(sub.node or ""):
                    break  # its agent was killed a moment ago: handed over once a new one runs
                if sub.state == wire.PoolState.RUNNING and isinstance(rec, dict):
                    if rec.get("type") == "status" and is_terminal(rec.get("status")):
                        sub.reason, self.dirty = f"{rec.get('status')} by the caller", True
                    try:
                        if not ray.get(self.agents.get(sub.node or "").deliver.remote(sub.sid, rec),
                                       timeout=CALL_TIMEOUT_S):
                            break
                    except Exception as exc:  # noqa: BLE001 - kept: tried again next tick
                        self.agent_failed(sub.node or "", exc)
                        break
                kv.kv_del(sub.inbox.pop(seq))
                busy = True
        return busy

    def remove_pg(self, sub: Sub) -> None:
        """Its group goes: at once when Ray placed it (it was dispatched to a
        node), else once no bundle of it can be being prepared
        (`place.Doomed`: one found by its name may be one a cancel left
        pending a moment ago)."""
        known, sub.pg = sub.pg, None
        pg = known or place.existing(sub.sid)
        if pg is not None:
            self.doomed.add(pg, placed=known is not None and sub.node is not None)


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        sys.stderr.write("usage: python -m zapcli.executors.ray_dispatch KEY GEN CALLER IDLE_S\n")
        return 2
    try:
        import ray
    except Exception as exc:  # noqa: BLE001 - found by the job's probe, yet it does not import
        sys.stdout.write(f"{wire.NO_PYTHON} {sys.executable}: {type(exc).__name__}: {exc}\n")
        return 3

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
