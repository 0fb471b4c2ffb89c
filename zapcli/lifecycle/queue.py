"""The daemonless queue (docs/explanation/rules.md#queue) and `--after` dependencies.

Imports `zapcli.lifecycle.observe`, `zapcli.lifecycle.session`,
`zapcli.lifecycle.limits` (an account's usage limit, an endpoint's 429
burst: what holds a subagent back), `zapcli.executors`, `zapcli.trail`. Whoever observes a free slot (spawn, poll, list, wait, a
finishing child) calls `drain`, which starts queued subagents in creation
order under the session's file lock, so each is started exactly once.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from zapcli import ids
from zapcli.config import Settings
from zapcli.errors import NotFound, StateError
from zapcli.lifecycle import limits
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.look import look_at
from zapcli.lifecycle.observe import act, observe, view_of
from zapcli.lifecycle.status import View
from zapcli.locks import LockTimeout, exclusive
from zapcli.paths import child_env, ensure_dir, locks_dir, subagents_dir, write_private
from zapcli.trail import ending, store
from zapcli.trail.model import Outcome, SpawnRecord, Status
from zapcli.trail.reader import Summary, load
from zapcli.trail.records import iso_utc

LOCK_TIMEOUT_S = 60.0


@contextmanager
def session_lock(session: str) -> Iterator[None]:
    """Hold the session's cross-process queue lock."""
    path = ensure_dir(locks_dir()) / f"queue-{sessions.key(session)}.lock"
    try:
        with exclusive(path, LOCK_TIMEOUT_S):
            yield
    except LockTimeout:
        raise StateError(f"the queue lock {path} stayed busy for {LOCK_TIMEOUT_S:.0f}s; try again") from None


def child_argv(sid: str) -> list[str]:
    """How a subagent's supervisor is started: the same interpreter, zapcli's
    entry point (`selfexec.zapcli_argv`, as `-m zapcli` without runpy), its
    folder's files never on its module path (`zapcli.selfexec`)."""
    from zapcli.selfexec import zapcli_argv

    return zapcli_argv("run", "--subagent", "--id", sid)


ENV_SUFFIX = store.ENV  # the spawner's environment, until the subagent starts


def keep_env(sid: str) -> None:
    """Keep this process's environment (the spawner's) for `sid`'s start, in a
    file only its user can read: whoever starts it from the queue later (a
    `wait` in another shell, a finishing sibling) starts it with the keys and
    endpoints its caller had, as pueue keeps a task's environment. Written
    before its trail, so no observer can start it without; a failure to write
    it is the spawn's (it says why). `json.dumps`'s text, without the json package (it brings `re`)."""
    from zapcli import stdjson

    # not fsynced: like the trail it comes with, until a runner starts or it is left queued
    write_private(store.path_for(sid, ENV_SUFFIX), stdjson.dumps(dict(os.environ)).encode(), sync=False)


def drop_env(sid: str) -> None:
    """Delete what `keep_env` kept: `sid` started, or never will."""
    with contextlib.suppress(OSError, NotFound):
        store.path_for(sid, ENV_SUFFIX).unlink(missing_ok=True)


def _spawner_env(sid: str) -> dict[str, str]:
    """What `keep_env` kept for `sid`; this process's environment when there is
    none (a subagent spawned before it existed) or it cannot be read."""
    from zapcli import stdjson

    try:
        with open(store.path_for(sid, ENV_SUFFIX), encoding="utf-8") as fh:
            kept = stdjson.loads(fh.read())
        if isinstance(kept, dict) and all(isinstance(v, str) for v in kept.values()):
            return kept
    except (OSError, ValueError):
        pass
    return dict(os.environ)


def marker(fields: dict) -> str:
    """What the session's `queued` marker of a new subagent says (its spawn
    record's `fields`), so a drain passes it over unread while its pool is
    full (`_passed_over`): its cap (`c8`), `a` when it waits for others
    (`--after`: a failed one fails it, so it is always read), its own pool
    (`p` and the name's UTF-8 in hex). Empty when that cannot be said: read."""
    cap, pool = fields.get("max_concurrent"), fields.get("pool")
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 0:
        return ""
    said = [f"c{cap}", *(["a"] if fields.get("after") else [])]
    if isinstance(pool, str) and pool and pool != "session":
        said.append("p" + pool.encode().hex())
    text = ".".join(said)
    return text if len(text) <= 160 else ""


def _passed_over(said: str, blocked: set[tuple[str, int]]) -> bool:
    """Whether a subagent whose `queued` marker says `said` cannot start in
    this drain without reading its trail: its pool is full for its cap."""
    cap, pool = None, "session"
    for part in said.split(".") if said else ():
        if part == "a" or not part:
            return False  # waits for others: read (a failed one fails it now)
        if part[0] == "c" and part[1:].isdigit():
            cap = int(part[1:])
        elif part[0] == "p":
            try:
                pool = bytes.fromhex(part[1:]).decode()
            except ValueError:
                return False
        else:
            return False  # a word this zapcli does not know: read
    return cap is not None and (pool, cap) in blocked


def launch(sid: str, settings: Settings, spawn: SpawnRecord | None = None) -> bool:
    """Start the runner of a queued subagent through its executor and append
    its `process` record. `spawn`: its spawn record, when the caller has read
    it already (else it is read here).

    Returns False when it cannot be started (its folder was removed while it
    waited, the machine is out of processes...): it is then recorded `failed`
    with the reason, so it never blocks the queue behind it. Raises StateError
    when the `process` record cannot be written.
    """
    from zapcli import executors
    from zapcli.executors.base import ExecutorError

    if spawn is None:
        spawn = load(sid).spawn
    env = child_env(_spawner_env(sid))
    env["ZAPCLI_SESSION"] = spawn.session
    env.pop("ZAPCLI_SUBAGENT_ID", None)
    sessions.unqueue(spawn.session, sid)  # first: a marker never outlives the start it announces
    started_mono = time.monotonic()
    cwd = spawn.cwd or "/"
    try:
        launched = executors.get(spawn.executor).launch(
            sid, child_argv(sid), env=env, cwd=cwd, stderr_path=store.path_for(sid, ".err"))
    except OSError as exc:
        why = (f"its working directory {cwd} no longer exists" if not os.path.isdir(cwd)
               else f"{exc.strerror or exc}")
        ending.end(store.path_for(sid), Outcome(Status.FAILED, None, f"could not start: {why}"))
        return False
    except ExecutorError as exc:  # its cluster refused or did not answer
        ending.end(store.path_for(sid), Outcome(Status.FAILED, None, f"could not start: {exc.message}"))
        return False
    finally:  # started, or never will be: the kept keys go
        drop_env(sid)
    timeout_s = spawn.timeout_s
    seq = store.append(store.path_for(sid), "process", {  # fsynced with the runner's `start`
        **launched.fields, "mono": started_mono,
        "deadline": iso_utc(time.time() + timeout_s), "deadline_mono": started_mono + timeout_s,
    }, sync=False)
    if seq is None:
        raise StateError(f"could not record the process of {sid}: the state directory is not writable")
    return True


def _dependency_block(view: View, settings: Settings) -> tuple[bool, str | None]:
    """(ready, failure reason) for the `--after` ids of a queued subagent."""
    for dep in view.after:
        try:
            dv = observe(dep, kill_grace_s=settings.kill_grace_s)
        except NotFound:
            return False, f"dependency {dep} was removed before this one could start (its trail is gone, its result unknown)"
        if not dv.terminal:
            return False, None
        if dv.status != Status.COMPLETED:
            return False, f"dependency {dep} ended {dv.status}"
    return True, None


# session -> sid -> (what its trail's stat said, its summary then): what the
# last drain of that session in this process read, so the next reads again
# only the trails that changed (a trail only grows by appends under its lock;
# retention's rewrite is a new file). Private to the queue: no one else sees
# a summary from it. A new process starts empty.
_SEEN: dict[str, dict[str, tuple[tuple[int, ...], Summary]]] = {}


class _Reads:
    """`load` for one drain of `session`, from what the last one read where
    the trail is the same file of the same size and times (`_SEEN`); what it
    reads is kept for the next, what it does not ask for is forgotten."""

    def __init__(self, session: str) -> None:
        self._last = _SEEN.get(session, {})
        self._now: dict[str, tuple[tuple[int, ...], Summary]] = {}
        _SEEN[session] = self._now
        self._folder = str(subagents_dir())

    def __call__(self, sid: str) -> Summary:
        if not ids.is_valid(sid):
            return load(sid)  # says why it is no subagent's (NotFound)
        try:
            st = os.lstat(f"{self._folder}/{sid}.jsonl")
        except OSError:
            return load(sid)  # says why it is not there (NotFound)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        hit = self._now.get(sid) or self._last.get(sid)
        if hit is None or hit[0] != key:
            # stat first, read after: bytes appended in between are read under
            # the older key, which the next stat no longer matches
            hit = (key, load(sid))
        self._now[sid] = hit
        return hit[1]

    def spawn(self, sid: str) -> SpawnRecord:
        """Its `spawn` record (a trail's first, never rewritten), as this drain read it."""
        hit = self._now.get(sid)
        return hit[1].spawn if hit is not None else load(sid).spawn


def _scan(session: str, settings: Settings, *, look: bool,
          summary: Callable[[str], Summary] = load, unread: dict[str, str] | None = None,
          among: list[str] | None = None,
          ) -> tuple[dict[str, int], dict[str, int], list[View | str], list[View]]:
    """(running per pool, running per model endpoint, the queued ones in
    creation order, the running views) of `session`. `look`: from the trails
    alone (nothing is asked of an executor: a remote runner costs no round
    trip to its cluster), where one not ended in its trail counts as
    running; else every one observed (a remote one that still runs out
    there is not collected: only its end frees a slot). `summary`: how a
    trail is read. `unread`: the ids a `queued` marker says never started:
    among the queued as their id, unread. `among`: only these ids."""
    running: dict[str, int] = {}  # per pool: the session's, or an executor's own cap
    on: dict[str, int] = {}  # per endpoint (a held back one waits for a slot there)
    waiting: list[View | str] = []
    running_views: list[View] = []
    for sid in sessions.active(session) if among is None else among:
        if unread and sid in unread:
            waiting.append(sid)
            continue
        try:
            s = summary(sid)
            view = view_of(sid, s) if look else act(look_at(sid, summary=s),
                                                    kill_grace_s=settings.kill_grace_s, progress=False)
        except NotFound:  # maybe a spawn in progress: its trail comes right after
            sessions.drop_if_abandoned(session, sid)
            continue
        if view.terminal:
            sessions.deactivate(session, sid)
        elif view.status == Status.QUEUED and view.queued_out_there is None:
            waiting.append(view)
        else:
            raw = s.spawn.raw
            pool = _pool(view.id, raw)
            running[pool] = running.get(pool, 0) + 1
            _count(on, raw.get("provider"))
            running_views.append(view)
    return running, on, waiting, running_views


def drain(session: str, settings: Settings) -> list[str]:
    """Start as many queued subagents of `session` as free slots allow.

    Returns the ids started. Also fails queued subagents whose dependency
    ended other than `completed`. The trails are read first: while they
    leave a free slot nothing else is asked; only a full cap observes the
    running ones (a remote one's cluster included) to find ones that ended.
    """
    started: list[str] = []
    with session_lock(session):
        reads = _Reads(session)
        unread = sessions.queued(session)
        running, on, waiting, running_views = _scan(session, settings, look=True, summary=reads,
                                                     unread=unread)
        looked_only = True
        parked = _parked(session, running_views)
        blocked: set[tuple[str, int]] = set()  # (pool, cap) full: stays full in this drain
        for item in waiting:
            if isinstance(item, str):  # never started, by its marker: read when it may start
                if _passed_over(unread[item], blocked):
                    continue
                found = _queued_view(session, item, reads)
                if not isinstance(found, View):  # gone, ended, or started after all: counted
                    if found is not None:
                        running_views.append(found[0])
                        running[found[1]] = running.get(found[1], 0) + 1
                        _count(on, found[2])
                    continue
                view = found
            else:
                view = item
            ready, failure = _dependency_block(view, settings)
            if failure:
                ending.end(store.path_for(view.id), Outcome(Status.FAILED, None, failure))
                sessions.deactivate(session, view.id)
                continue
            if not ready:
                continue
            # The cap it was spawned under, not the observer's: a `poll` run with
            # other settings must not start it early.
            spawn = reads.spawn(view.id)
            cap = settings.max_concurrent if spawn.max_concurrent is None else spawn.max_concurrent
            pool = _pool(view.id, spawn.raw)
            if cap and running.get(pool, 0) >= cap and looked_only:  # full by the trails: any ended?
                # only the running ones are asked (those this drain started too): a queued
                # one ends by a record in its trail
                running, on, _, running_views = _scan(session, settings, look=False, summary=reads,
                                                      among=[*(v.id for v in running_views), *started])
                looked_only = False
                parked = _parked(session, running_views)
            if cap and running.get(pool, 0) >= cap:
                blocked.add((pool, cap))
                continue
            if _held_for(view.id, spawn.raw.get("provider"), parked):
                continue
            reason = limits.hold(spawn.raw, session, on.get(str(spawn.raw.get("provider")), 0))
            if reason is not None:
                _say_held(view.id, reason)
                continue
            if not launch(view.id, settings, spawn):
                sessions.deactivate(session, view.id)
                continue
            started.append(view.id)
            running[pool] = running.get(pool, 0) + 1
            _count(on, spawn.raw.get("provider"))
    return started


def _queued_view(session: str, sid: str, reads: _Reads) -> View | tuple[View, str, object] | None:
    """The view of `sid`, queued by its marker, from its trail: None when it
    is gone or ended (its markers dropped); (its view, pool, endpoint) when
    its trail says it started all the same (it counts as running)."""
    try:
        s = reads(sid)
    except NotFound:  # maybe a spawn in progress: its trail comes right after
        sessions.drop_if_abandoned(session, sid)
        return None
    view = view_of(sid, s)
    if view.terminal:
        sessions.deactivate(session, sid)
        return None
    if view.status == Status.QUEUED and view.queued_out_there is None:
        return view
    sessions.unqueue(session, sid)
    return view, _pool(sid, s.spawn.raw), s.spawn.raw.get("provider")


def _count(on: dict[str, int], endpoint: object) -> None:
    if isinstance(endpoint, str):
        on[endpoint] = on.get(endpoint, 0) + 1


def _say_held(sid: str, reason: dict) -> None:
    """Its `held` record, written when the reason is new or about to run out
    (poll and list read why it waits there)."""
    try:
        held = load(sid).held
        until = held.get("until") if held else None
        if held is None or held.get("reason") != reason["reason"] or not isinstance(
                until, (int, float)) or until < min(reason["until"], time.time() + 10):
            store.append(store.path_for(sid), "held", reason)
    except (NotFound, OSError):
        pass  # removed meanwhile, or a full disk: it is held all the same


PARKED_TO_HOLD = 2  # this many subagents of a session parked on one provider hold its next


def _parked(session: str, views: list[View]) -> dict[str, list[float]]:
    """provider -> when each of the session's subagents parked on its rate
    limit may try again (only those still waiting)."""
    now = time.time()
    out: dict[str, list[float]] = {}
    for v in views:
        limit = v.rate_limit or {}
        until, provider = limit.get("until"), limit.get("provider")
        if isinstance(until, (int, float)) and until > now and isinstance(provider, str):
            out.setdefault(provider, []).append(float(until))
    return out


def _held_for(sid: str, provider: object, parked: dict[str, list[float]]) -> bool:
    """Hold a queued subagent whose provider is rate-limiting several of its
    session's subagents: starting it would only add to the retries. Said once
    in its trail (a `held` record), so poll and list show why it waits."""
    untils = parked.get(provider) if isinstance(provider, str) else None
    if not untils or len(untils) < PARKED_TO_HOLD:
        return False
    until = min(untils)
    try:
        held = load(sid).held
        if held is None or not isinstance(held.get("until"), (int, float)) or held["until"] < until:
            store.append(store.path_for(sid), "held", {
                "reason": f"{provider} is rate-limiting {len(untils)} subagents of this session",
                "provider": provider, "until": until})
    except (NotFound, OSError):
        pass  # removed meanwhile, or a full disk: it is held all the same
    return True


def _pool(sid: str, raw: dict | None = None) -> str:
    """Whose cap a subagent counts against: the session's (local and remote
    alike), or its executor's own (`ray.max_concurrent`, frozen as `pool`)."""
    if raw is None:
        raw = load(sid).spawn.raw
    pool = raw.get("pool")
    return pool if isinstance(pool, str) and pool else "session"
