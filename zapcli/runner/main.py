"""`zapcli run --subagent --id ID`: the runner's main.

Imports `zapcli.trail`, `zapcli.supervisor`, `zapcli.backends` (the seam; each
backend lazily), `zapcli.runner.guard` (for in-process work only), and `zapcli.lifecycle` (queue drain,
retention) at exit. Reads its task from its own `spawn` record (never argv),
writes `start`, runs the backend, and ends the subagent synchronously (fsync)
before it exits, whatever happens. It holds the workspace trust its spawner
recorded (`zapcli.trust.inherit`) for its whole run.
"""

from __future__ import annotations

import _signal  # signal's core: `signal` builds its enums at import (a runner's start)
import os
import sys
import threading
import time

from zapcli import tracecontext, trust
from zapcli.backends.base import RunContext
from zapcli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from zapcli.redact import secret_values
from zapcli.runner import scratch, tether, tree
from zapcli.supervisor.capture import CappedFile
from zapcli.supervisor.launch import MARKER, process_create_time
from zapcli.trail import endslot, store
from zapcli.trail.latest import Latest, Watch
from zapcli.trail.model import Outcome, SpawnRecord, Status
from zapcli.trail.reader import Summary, final_text, load, spawn_of
from zapcli.trail.writer import TrailWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.telemetry.live import Live


def _open_capture(sid: str, suffix: str, secrets: list[bytes]) -> CappedFile:
    path = store.path_for(sid, suffix)
    try:
        fd = store.create_exclusive(path)
    except FileExistsError:
        fd = store.open_append(path)
    return CappedFile(fd, secrets)


def _print_exc() -> None:
    """The traceback of the exception being handled, to stderr (the `.err`
    file): `traceback` is imported only when there is one to print."""
    import traceback

    traceback.print_exc(file=sys.stderr)


CLAIM_WAIT_S = 5.0


def _claim(sid: str) -> str | None:
    """None when this process is the one zapcli launched for `sid`, else why not.

    The launcher appends a `process` record naming our pid right after the
    fork; running `run --subagent` by hand on a live or queued subagent would
    run its task twice, so it is refused.
    """
    from zapcli.supervisor.liveness import is_alive

    me = os.getpid()
    give_up = time.monotonic() + CLAIM_WAIT_S
    s: Summary | Latest = load(sid)  # the first look reads it all: a damaged trail says so
    watch = Watch(store.path_for(sid))
    while True:
        if s.final is not None:
            return f"{sid} already ended ({s.final.status})"
        for rec in (s.start, s.process):
            if rec and rec.pid != me and is_alive(rec.pid, rec.create_time):
                return f"{sid} is already running (pid {rec.pid})"
        if s.process and s.process.pid == me:
            return None
        if time.monotonic() > give_up:
            return (f"{sid} was not launched for this process; `run --subagent` is started by "
                    "`zapcli spawn` and the queue, not by hand")
        time.sleep(0.02)
        try:
            s = watch.read()  # what follows its spawn record, not the whole trail again
        except OSError:
            s = load(sid)  # gone or replaced meanwhile: said as the first look says it


def _start(sid: str, spawn: SpawnRecord, writer: TrailWriter, started_mono: float,
           deadline: float) -> bool:
    """Write `start`, under the trail's lock `kill` takes to record a cancel:
    either the cancel comes first and nothing starts (False), or `start` does
    and the cancel follows it."""
    pid = os.getpid()
    with store.locked(store.path_for(sid)):
        if load(sid).final is not None:  # killed between its launch and now
            return False
        writer.write_sync("start", {"pid": pid, "create_time": process_create_time(pid),
                                    "mono": started_mono, "deadline_mono": deadline,
                                    "definition": spawn.definition, "tools": spawn.granted_tools,
                                    "diagnostics": len(spawn.diagnostics)})
    # queued no more, whoever started it (a start by a zapcli that left the marker must not
    # leave it looking unstarted to the queue: it would not be counted against the cap)
    from zapcli.lifecycle import session as sessions

    sessions.unqueue(spawn.session, sid)
    if "started" in spawn.hooks:  # its hook's machinery only for a subagent that has one
        from zapcli.trail import events

        events.emit(store.path_for(sid), "started")
    return True


def _record_helpers(writer: TrailWriter) -> list[dict]:
    """Record every helper process started from here on (an MCP server, a
    command in its own group) in the trail, fsynced before it is used, so
    an observer can end it if we die (C17). Returns the live list."""
    from zapcli import children

    helpers: list[dict] = []

    def record(pid: int, name: str) -> None:
        try:
            pgid = os.getpgid(pid)
        except OSError:
            return
        fields = {"pid": pid, "create_time": process_create_time(pid), "pgid": pgid, "name": name}
        helpers.append(fields)
        writer.write_sync("helper", fields)

    children.listen(record)
    return helpers


def _signals(terminated: threading.Event) -> None:
    _signal.signal(_signal.SIGTERM, lambda *_: terminated.set())
    _signal.signal(_signal.SIGINT, lambda *_: terminated.set())
    _signal.signal(_signal.SIGHUP, _signal.SIG_IGN)
    # `spawn` holds these signals while it launches us, and a signal mask is
    # inherited: let them in now (one that is pending reaches our handlers).
    _signal.pthread_sigmask(_signal.SIG_SETMASK, set())


def _prefetch(sid: str) -> None:
    """The built-in agent's heavy imports on a thread, started first thing:
    `openai` (~0.5 s, most of the time to the first model request), the price
    library for the cost of its first call unless its spawn froze a price from
    config.yaml or an earlier runner remembered the model's, and, when the grant has MCP servers, `mcp` before them. Meanwhile this thread claims
    the subagent, writes `start`, reserves the end, builds the grant and
    starts the MCP servers (waiting on processes and fsyncs): the first
    request waits only for what is left of the imports. Both threads import
    top-down through the same packages, and whoever imports a module second
    waits for it on Python's import lock. Best effort: a failure here is met
    again, and reported, where the module is really used."""
    try:
        spawn = spawn_of(store.path_for(sid))  # its first line: the claim reads the rest
    except Exception:  # noqa: BLE001 - the claim right after says what is wrong
        return
    if spawn is None or spawn.cli != "zapcli":
        return
    from zapcli.remembered_prices import answered  # a built-in agent's runner only

    mcp = (spawn.grant or {}).get("mcp")
    names = (["mcp", "mcp.client.stdio"] if isinstance(mcp, dict) and mcp.get("servers") else []) + \
        ["openai"]
    if not isinstance(spawn.raw.get("price"), dict) and not answered(spawn.model):
        # priced by config.yaml, or remembered by an earlier runner: the library
        # (its database ~4 MB, for good) loads only if a call names another model
        names.append("genai_prices")

    def work() -> None:
        from importlib import import_module

        from zapcli.providers import sdk

        for name in names:
            try:
                sdk.load() if name == "openai" else import_module(name)  # as the client imports it
            except Exception:  # noqa: BLE001 - see above
                return

    threading.Thread(target=work, name="prefetch-imports", daemon=True).start()


def main(sid: str) -> int:
    """Run subagent `sid` to its end. Returns the process exit code."""
    started_mono = time.monotonic()
    # The keys our launcher handed over outside our environment block, and
    # no dump: tools run as the same user (docs/explanation/rules.md#sandbox)
    from zapcli import keyguard

    keyguard.guard()
    _prefetch(sid)
    refusal = _claim(sid)
    if refusal is not None:
        sys.stderr.write(f"zapcli: error: {refusal}\n")
        return EXIT_USAGE
    s = load(sid)
    spawn = s.spawn
    os.environ[MARKER] = sid  # everything its work starts carries it, however detached
    trust.inherit(spawn.raw.get("trust"))  # its spawner's decision, for it and what it spawns
    os.environ.update(tracecontext.work_env(spawn.raw.get("trace")))  # its work joins its trace
    live = _follow(sid) if tracecontext.export_wanted() else None
    secrets = secret_values()
    writer = TrailWriter(store.path_for(sid), start_seq=max(s.last_seq, 1), secrets=secrets)
    terminated = threading.Event()
    _signals(terminated)
    out = _open_capture(sid, ".out", secrets)
    err = _open_capture(sid, ".err", secrets)
    deadline = started_mono + spawn.timeout_s
    if not _start(sid, spawn, writer, started_mono, deadline):
        for f in (writer, out, err):
            f.close()
        if live is not None:
            live.stop()
        return EXIT_FAILED
    endslot.reserve(writer.path)  # room for the end, whatever the disk does later
    helpers = _record_helpers(writer)
    tether.hold(sid, spawn, terminated)
    try:
        outcome = _scratch(sid)
        if outcome is None:
            work, outcome = tree.enter(spawn, writer, err, deadline, terminated)
            if work.workspace != spawn.workspace:  # its tree: a checkout of what was decided on
                trust.inherit(spawn.raw.get("trust"), work.workspace)
        if outcome is None:
            ctx = RunContext(sid, work, "", writer, out, err, deadline, terminated,
                             stop_grace=lambda: _kill_grace(sid, spawn.kill_grace_s))
            outcome = _run_backend(ctx)
    except Exception as exc:  # the runner's catch-all: a result is never lost
        _print_exc()
        outcome = Outcome(Status.FAILED, None, f"internal error: {type(exc).__name__}: {exc}")
    out.close()
    err.close()
    if helpers:  # normally ended by whoever started them; never left behind (C17)
        from zapcli.supervisor.kill import kill_helpers

        kill_helpers(helpers, 1.0)
    if outcome.status in (Status.CANCELLED, Status.TIMEOUT):  # killed: so is what it left detached
        from zapcli.supervisor.kill import end_marked

        end_marked(sid, 1.0)
    tree.leave(spawn)  # a fenced branch a plain ref again (nothing without a tree)
    scratch.drop(sid)  # its scratch folder goes with it (what was worth keeping is in the workspace)
    outcome = _check_in_time(sid, spawn, outcome, writer, deadline)
    if outcome.status == Status.QUEUED:  # its backend put it back in the queue (C43)
        outcome = _requeue(sid, spawn, writer, outcome)
        if outcome.status == Status.QUEUED:
            if live is not None:
                live.stop()
            return EXIT_OK
    pending = _pending(sid, spawn, writer)
    writer.end(outcome, retry_s=max(spawn.kill_grace_s, 5.0), stdout_bytes=out.written,
               stderr_bytes=err.written, stdout_kept=out.kept, stderr_kept=err.kept, **pending)
    writer.close()
    tether.settle_self(sid)  # every call counted, the last one too; the allotment returns
    _after_exit(spawn, sid, busy=terminated.is_set())
    if (outcome.extra or {}).get("usage_limit") and spawn.raw.get("resume_after_limit"):
        from zapcli.runner.resume import after_the_reset

        after_the_reset(sid, spawn, outcome.extra["usage_limit"])  # type: ignore[index]
    if live is not None:  # after the status and the queue: delivery never holds either
        live.stop()
    return EXIT_OK if outcome.status == Status.COMPLETED else EXIT_FAILED


def _requeue(sid: str, spawn: SpawnRecord, writer: TrailWriter, outcome: Outcome) -> Outcome:
    """Its work ended on a 429 before doing anything (C43): the same id goes
    back in the queue (a `requeued` record: no runner now), to be started
    again by whoever drains next. A `failed` outcome when that could not be
    written."""
    from zapcli.lifecycle import queue

    attempt = load(sid).requeued + 1
    try:  # whoever starts it again starts it with its spawner's keys, as the first time
        queue.keep_env(sid)
    except OSError as exc:
        return Outcome(Status.FAILED, None, f"{outcome.reason} (it could not be put back in "
                       f"the queue: {exc.strerror or exc})")
    if not writer.write_sync("requeued", {"reason": outcome.reason, "attempt": attempt},
                             retry_s=5.0):
        queue.drop_env(sid)
        return Outcome(Status.FAILED, None, f"{outcome.reason} (it could not be put back in "
                       "the queue: the state folder is full or read-only)")
    endslot.release(writer.path)
    writer.close()
    try:
        from pathlib import Path

        from zapcli.backends.sections import OWNERS
        from zapcli.config import load_settings

        queue.drain(spawn.session, load_settings(Path(spawn.workspace), lenient=True,
                                                 owners=OWNERS))
    except Exception:
        _print_exc()
    return outcome


def _pending(sid: str, spawn: SpawnRecord, writer: TrailWriter) -> dict[str, list[str]]:
    """Its own subagents still running as it ends (C27): said, and named in its status."""
    from zapcli.runner.pending import say, still_running

    ids = still_running(sid, spawn.session)
    if not ids:
        return {}
    writer.append("diagnostic", {"dimension": "tree", "name": "pending", "message": say(ids)})
    return {"pending": ids}


def _follow(sid: str) -> Live | None:
    """Send this subagent's spans live as its trail makes them (docs/explanation/rules.md#fleets-traces-teams)."""
    from zapcli.telemetry.live import start

    return start(store.path_for(sid), sid)


def _scratch(sid: str) -> Outcome | None:
    """The private TMPDIR, before anything of the work runs (C23); a
    `failed` outcome when it cannot be made."""
    try:
        scratch.make(sid)
    except OSError as exc:
        return Outcome(Status.FAILED, None, f"could not create its scratch folder: {exc.strerror or exc}")
    return None


def _run_backend(ctx: RunContext) -> Outcome:
    """The task from the spawn record, then the backend; in-process work gets
    the watchdog and the backstop too."""
    from zapcli.redact import MissingSecret, UnrecordedSecret, unmark

    try:  # only the references its spawn made: never a value a model's text names
        ctx.task = unmark(ctx.spawn.task, names=_recorded(ctx.spawn))
    except MissingSecret as exc:
        return Outcome(Status.FAILED, None, f"the task uses the value of ${exc.args[0]}, which "
                       "is not set in this subagent's environment")
    except UnrecordedSecret as exc:
        return Outcome(Status.FAILED, None, f"the task refers to the secret ${exc.args[0]}, which "
                       "its spawn did not record (a trail from an older zapcli, or one changed by "
                       "hand); nothing was run: spawn it again")
    from zapcli.backends.registry import Unusable, for_spawn

    try:
        backend = for_spawn(ctx.spawn)
    except Unusable as exc:
        return Outcome(Status.FAILED, None, str(exc))
    if not backend.in_process:
        return _reported(ctx, backend.reports, backend.run(ctx))
    # psutil comes with it: in-process work only, imported before any alarm is armed
    from zapcli.runner import guard

    done = threading.Event()
    leave = lambda: _after_exit(ctx.spawn, ctx.sid, busy=True)  # noqa: E731
    grace = ctx.spawn.kill_grace_s
    threading.Thread(target=guard.watchdog, name="watchdog", daemon=True, kwargs=dict(
        writer=ctx.writer, deadline=ctx.deadline_mono, terminated=ctx.terminated, done=done,
        grace_s=grace, after=leave)).start()
    guard.arm_backstop(ctx.sid, ctx.deadline_mono, grace, leave)
    try:
        return _reported(ctx, backend.reports, backend.run(ctx))
    finally:
        done.set()
        guard.disarm_backstop()


def _recorded(spawn: SpawnRecord) -> list[str]:
    """The secret references `spawn` made for its task (`secret_refs`)."""
    names = spawn.raw.get("secret_refs")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


NO_REPORT = ("no report: it ended without a final answer (an empty report is never a success: "
             "`zapcli replay {sid}` shows what it did, `zapcli continue {sid} TEXT` asks again)")


def _reported(ctx: RunContext, reports: bool, outcome: Outcome) -> Outcome:
    """C29, for every backend whose work ends with a report: `completed` with
    an empty (or blank) final report is `failed`, saying "no report"."""
    if not reports or outcome.status != Status.COMPLETED:
        return outcome
    report = load(ctx.sid).report
    if report and report.strip():
        return outcome
    return Outcome(Status.FAILED, outcome.exit_code, NO_REPORT.format(sid=ctx.sid))


def _check_in_time(sid: str, spawn: SpawnRecord, outcome: Outcome, writer: TrailWriter,
                   deadline: float) -> Outcome:
    """`_check_output` under the deadline, for every backend: the backend's own
    guards are off by now, and a schema's pattern can backtrack for ever in C
    (holding the interpreter), so the SIGALRM backstop is armed around it."""
    if spawn.output_schema is None or outcome.status != Status.COMPLETED:
        return outcome
    from zapcli.runner import guard

    writer.flush()  # the backstop ends the trail directly: what was said is there first
    guard.arm_backstop(sid, deadline, spawn.kill_grace_s,
                       lambda: _after_exit(spawn, sid, busy=True),
                       reason="deadline reached while the final report was checked against "
                              "the output schema (a pattern that backtracks?)")
    try:
        return _check_output(sid, spawn, outcome)
    finally:
        guard.disarm_backstop()


def _check_output(sid: str, spawn: SpawnRecord, outcome: Outcome) -> Outcome:
    """`--output-schema`, the same for every backend: a completed subagent whose
    final report is not JSON valid for the schema ends `failed` (the built-in
    agent has already had its tries to fix it)."""
    schema = spawn.output_schema
    if schema is None or outcome.status != Status.COMPLETED:
        return outcome
    from zapcli import outputschema

    problem = outputschema.check(schema, final_text(sid, load(sid).report))
    if problem is None:
        return outcome
    return Outcome(Status.FAILED, None, f"{outputschema.REASON}: {problem}")


def _kill_grace(sid: str, default: float) -> float:
    """The grace a `zapcli kill --grace` asked for (recorded with the cancel,
    before its SIGTERM), so the command gets what the user gave; else ours."""
    final = load(sid).final
    if final is not None and final.by == "kill" and final.grace_s is not None:
        return final.grace_s
    return default


def _after_exit(spawn: SpawnRecord, sid: str, busy: bool = False) -> None:
    """Free our slot: start the next queued subagent; retention if idle."""
    try:
        from pathlib import Path

        from zapcli.backends.sections import OWNERS
        from zapcli.config import load_settings
        from zapcli.lifecycle import queue, retention
        from zapcli.lifecycle import session as sessions

        sessions.deactivate(spawn.session, sid)
        settings = load_settings(Path(spawn.workspace), lenient=True, owners=OWNERS)
        queue.drain(spawn.session, settings)
        # Retention deletes trails by `max_kept`: never on a guess, so not
        # while a config layer is invalid; nor when killed (exit within grace).
        if not busy and not settings.problems:
            retention.collect(settings, opportunistic=True)
    except Exception:
        _print_exc()
