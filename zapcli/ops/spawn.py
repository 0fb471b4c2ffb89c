"""`zapcli spawn`: validate, write the frozen `spawn` record, start or queue.

Imports `zapcli.lifecycle.queue`, `zapcli.lifecycle.session`, `zapcli.trail`, `zapcli.config`,
`zapcli.tracecontext`; `zapcli.backends.registry` (the chosen backend's `prepare`);
`zapcli.executors` only for a subagent that does not run on this machine.
Every check runs before anything is created: a refused spawn leaves no trail,
no marker, no process (docs/explanation/rules.md#commands spawn).
The workspace's own files count as far as its trust goes (`zapcli.trust`):
one decision per spawn, said in a line, recorded for what the subagent spawns.
"""

from __future__ import annotations

import _signal  # signal's core: `signal` builds its enums at import (~0.5 ms of every spawn)
import os
import time
from pathlib import Path

from zapcli import agentroots, ids, tracecontext, trust
from zapcli.backends.registry import backend_for
from zapcli.backends.sections import OWNERS
from zapcli.config import APPROVAL_MODES, MAX_INT, Settings, load_settings
from zapcli.errors import UsageError, ZapcliError, either, param
from zapcli.lifecycle import queue
from zapcli.lifecycle import session as sessions
from zapcli.ops import spawnhooks
from zapcli.ops.delegate import within_spawner
from zapcli.ops.tasktext import MAX_TASK_BYTES, argv_text, refuse_nul, require_utf8
from zapcli.paths import subagents_dir, workspace_of
from zapcli.plain import plain, replace
from zapcli.redact import display, mark, marked, secret_values
from zapcli.trail import records, store

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


@plain
class SpawnRequest:
    """Arguments of one spawn. `task` is text; timeout in seconds."""

    task: str
    cli: str | None = None  # None: the definition's `cli:`, else zapcli
    agent: str | None = None
    model: str | None = None
    default_model: str | None = None  # a run's --model: its tree's session default (docs/how-to/models.md)
    timeout_s: float | None = None
    approval: str | None = None
    cwd: str | None = None
    after: tuple[str, ...] = ()
    max_tokens: int | None = None
    unattended: bool = False
    worktree: bool = False  # work in a new git worktree on branch zapcli/<id> (docs/explanation/rules.md#parallel-coding)
    on_finish: str | None = None  # a shell command run once when it ends; "" = none
    # `--on-event EVENT=CMD`: event -> command run once per occurrence ("" = none),
    # over config `hooks:` event by event (`zapcli.trail.events`); None: config's
    on_event: dict[str, str] | None = None
    output_schema: str | dict | None = None  # a JSON Schema (a file, or inline) the final report must satisfy
    # `zapcli continue` (`zapcli.ops.continue_` decides what): the spawn-record
    # fields carried over from the old subagent (definition, model, grant, an
    # agent CLI's backend, tree, `continue_of`...), used instead of resolving.
    inherit: dict[str, Any] | None = None
    executor: str | None = None  # None: config `executor` (default local)
    # `zapcli run` with a terminal: {pid, create_time, host} of the run that asks
    # a person about this subagent's approvals; the gate denies once it is gone
    relay: dict[str, Any] | None = None
    # where it sits in a trace (docs/explanation/rules.md#fleets-traces-teams): the W3C traceparent it is the child
    # of (None: the environment's TRACEPARENT, for work spawned from inside a
    # subagent); the subagent or run it was started from is `parent`, below
    traceparent: str | None = None
    # `spawn --attempts N`: {"ids": every sibling's id, "index": 1..N} (`zapcli.ops.attempts`)
    attempt: dict[str, Any] | None = None
    max_cost: float | None = None  # dollars (input + output, cache included)
    # its tree (docs/explanation/rules.md#budgets, `zapcli.ops.tree`): whose work spawns it (None: the
    # subagent marker in our environment), the run it must not outlive
    # ({id, pid, create_time}), how many spawns share one model message
    parent: str | None = None
    run: dict[str, Any] | None = None
    siblings: int = 1
    batch: str | None = None  # names that message: its spawns share evenly
    # Its commands in the OS sandbox (docs/explanation/rules.md#sandbox): None = the backend's default
    # (the built-in agent: "auto", where this machine can; sh: "off"), "on" = must
    sandbox: str | None = None
    fork: dict[str, Any] | None = None  # the run's conversation it starts from (`ops.fork`)
    # A shell a model chose (the run's `subagent` tool, `mcp serve`, `zapcli call`): the variables
    # its scrubbed environment keeps (the definition's `env`); None: the caller's own command
    # (`zapcli.ops.sandboxing.for_spawn`: sandboxed as `sandbox`, else config model_shell_sandbox)
    model_shell: tuple[str, ...] | None = None
    # Delegation never widens (`zapcli.ops.delegate`): the spawn-record fields of who spawns (None:
    # the subagent whose work it is), who asks the person about a child holding more (None: refused)
    spawner: dict[str, Any] | None = None
    ask_widening: Callable[[str], tuple[bool, str]] | None = None
    trust: bool = False  # `--trust`: trust the workspace's own files as they are now, first
    # an agent CLI stopped by its account's usage limit is continued once it resets (C42)
    resume_after_limit: bool = False


@plain
class SpawnResult:
    id: str
    status: str
    cli: str
    task: str
    created: str
    warnings: tuple[str, ...] = ()
    agent: str | None = None  # the definition, for the zapcli backend
    budget: dict[str, Any] | None = None  # its allotment of its tree's budget (docs/explanation/rules.md#budgets)


def _validate(req: SpawnRequest, settings: Settings) -> tuple[str, float]:
    backend_for(req.cli or "zapcli", settings)
    for flag, value in ((param("agent"), req.agent), (param("model"), req.model)):
        require_utf8(flag, value)
        if value is not None and not value.strip():
            raise UsageError(f"{flag} is empty; give a name (zapcli agents list shows the "
                             f"definitions and their models) or leave {flag} out")
    task = argv_text(req.task)
    if not task or not task.strip():
        raise UsageError("the task is empty; give the work to do"
                         + either(", e.g. zapcli spawn --cli sh -- 'make test'", " in `task`"))
    refuse_nul(task)
    size = len(task.encode("utf-8", "surrogatepass"))
    if size > MAX_TASK_BYTES:
        raise UsageError(f"task is {size:,} bytes; the limit is {MAX_TASK_BYTES:,} bytes (1 MB)")
    try:
        task.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("task is not valid UTF-8 text") from None
    timeout = settings.timeout_s if req.timeout_s is None else req.timeout_s
    if not (0 < timeout <= 7 * 86400):  # also refuses NaN
        where = param("timeout") if req.timeout_s is not None else "timeout_s (config or ZAPCLI_TIMEOUT_S)"
        raise UsageError(f"{where} must be more than 0 and at most 604800 seconds, got {timeout}")
    if req.max_tokens is not None and not 0 < req.max_tokens <= MAX_INT:
        raise UsageError(f"{param('max_tokens')} must be a positive number of tokens up to "
                         f"{MAX_INT}, got {req.max_tokens}")
    if req.approval is not None and req.approval not in APPROVAL_MODES:
        raise UsageError(f"unknown {param('approval')} '{req.approval}'; choose one of: "
                         f"{', '.join(APPROVAL_MODES)}")
    req.after = tuple(store.resolve(dep) for dep in req.after)
    for dep in req.after:
        if not ids.is_valid(dep) or not store.exists(dep):
            raise UsageError(f"{param('after')} {dep!r}: no such subagent")
    return task, float(timeout)


def _catalog(req: SpawnRequest, workspace: Path) -> Any:
    """The definitions, read once for `--agent` (the backend it names, then
    its fields); None without one, or when they cannot be read (resolving
    says why)."""
    if not req.agent or req.inherit is not None:
        return None
    from zapcli.definitions import discover

    try:
        return discover(workspace)
    except ZapcliError:
        return None


def _choose_backend(req: SpawnRequest, workspace: Path, catalog: Any) -> SpawnRequest:
    """`--cli` when given, else the backend the definition names (`cli:`), else zapcli."""
    if req.cli:
        return req
    from zapcli.backends.cli_resolve import definition_cli

    return replace(req, cli=definition_cli(req.agent, workspace, catalog) or "zapcli")


def _backend_fields(req: SpawnRequest, workspace: Path, settings: Settings,
                    cwd: Path, catalog: Any) -> tuple[dict, tuple[str, ...]]:
    """Definition, model and warnings for the chosen backend (resolved before any fork)."""
    from zapcli.backends.base import SpawnInput

    cli = req.cli or "zapcli"
    backend = backend_for(cli, settings)
    fields, warnings = backend.prepare(SpawnInput(
        cli=cli, workspace=workspace, cwd=cwd, settings=settings, agent=req.agent,
        model=req.model, approval=req.approval, unattended=req.unattended,
        max_tokens=req.max_tokens, catalog=catalog))
    if backend.genai_provider:  # for its trace's spans (gen_ai.provider.name)
        fields.setdefault("genai_provider", backend.genai_provider)
    return fields, warnings


def _extras(req: SpawnRequest, settings: Settings, cwd: Path, sid: str) -> dict[str, Any]:
    """The docs/explanation/rules.md#parallel-coding fields: tree receipt, on-finish command, output schema;
    where its calls go (`provider`, `account`: the queue's holds) and
    whether a usage limit resumes it. Raises UsageError (before anything is
    created)."""
    out: dict[str, Any] = {}
    if req.worktree:
        from zapcli import worktrees
        from zapcli.worktrees.git import plan

        out["worktree"] = {**plan(cwd, worktrees.path_for(sid), worktrees.branch_for(sid)).to_dict(),
                           **settings.worktree,  # setup, teardown: frozen (the user's config only)
                           "hooks_from": settings.where.get("worktree")}  # file:line, said on failure
    out.update(spawnhooks.frozen(req.on_finish, req.on_event, settings))
    if req.output_schema is not None:
        from zapcli import outputschema

        out["output_schema"] = outputschema.given(req.output_schema)
    if req.attempt is not None:
        out["attempts"] = req.attempt
    out.update({"resume_after_limit": True} if req.resume_after_limit else {})
    return {**backend_for(req.cli or "zapcli", settings).account(os.environ), **out}


def _fork(req: SpawnRequest) -> dict[str, Any] | None:
    if req.fork is None:
        return None
    from zapcli.ops import fork
    return fork.fields(req.fork, str(req.cli))


def _executor_fields(req: SpawnRequest, settings: Settings, team: bool) -> dict:
    """`executor` and its frozen settings for the spawn record; the executor
    checks it can launch now (a cluster that does not answer: one line, exit
    1, nothing created). A local subagent imports no executor."""
    name = req.executor or settings.sections.get("executor") or "local"
    if name == "local":
        return {}
    from zapcli import executors

    try:
        executor = executors.get(name)
    except KeyError:
        raise UsageError(f"unknown {param('executor')} '{name}'; choose one of: "
                         f"{', '.join(executors.names())}") from None
    except executors.Unusable as exc:
        raise ZapcliError(str(exc), code="executor") from None
    if team and executor.remote:  # a team's board and messages are on this machine, out of its reach
        from zapcli.team.holders import team_away
        raise UsageError(team_away(name))
    options = dict(settings.sections.get(name) or {})
    fields = {"executor": name, **executor.check(options)}
    if options.get("max_concurrent") is not None:  # a cap of its own, counted over its own pool
        fields.update(max_concurrent=options["max_concurrent"], pool=name)
    return fields


def _least(*values: Any) -> Any:  # the smallest of the values given (None: not given)
    return min((v for v in values if v is not None), default=None)


def _maybe_collect(p: Prepared, status: str) -> None:
    """Retention, opportunistically (docs/explanation/rules.md#retention): only when the folder holds
    more subagents than `max_kept` (one directory listing: a normal spawn pays nothing), and not
    for one that runs or waits on this machine: its runner collects when it ends."""
    from zapcli.trail.model import is_terminal

    settings = p.settings
    if not settings.max_kept or (p.fields.get("executor", "local") == "local" and not is_terminal(status)):
        return
    try:
        count = sum(1 for n in os.listdir(subagents_dir()) if n.endswith(".jsonl"))
    except OSError:
        return
    if count > settings.max_kept:
        from zapcli.lifecycle.retention import collect

        collect(settings, opportunistic=True)


@plain
class Prepared:
    """One spawn, checked and resolved, not created yet (`create` does)."""

    sid: str
    session: str
    fields: dict[str, Any]
    settings: Settings
    warnings: tuple[str, ...]
    cli: str
    task: str
    now: float
    placed: Any = None  # its place in its tree (`ops.tree.Placement`): given back if not created


def prepare(req: SpawnRequest, settings: Settings | None = None, *, sid: str | None = None, turn: Callable[[], None] | None = None) -> Prepared:
    """Check and resolve one spawn; nothing is created. Raises ZapcliError. `sid`: the
    id to give it (attempts choose their siblings' ids first); `turn`: as `spawn`'s."""
    if req.cwd is not None and not Path(req.cwd or "\0").is_dir():
        raise UsageError(f"{param('cwd')} {req.cwd!r} is not a directory")
    try:
        cwd = Path(req.cwd or os.getcwd()).resolve()
    except FileNotFoundError:
        raise UsageError("the current directory no longer exists; cd to an existing one or pass --cwd") from None
    require_utf8("the working folder's path" if req.cwd is None else param("cwd"), str(cwd))
    require_utf8(param("on_finish"), req.on_finish)
    spawnhooks.check(req.on_finish, req.on_event)
    workspace = workspace_of(cwd)
    from zapcli.ops.tree import inherit_trust

    inherit_trust(req.parent)
    if req.trust:  # `--trust`: the files as they are now, before anything reads them
        from zapcli.ops.trust import first
        first(workspace, req.trust)
    with trust.Scope(workspace) as verdict:
        return _prepare(req, settings, sid, cwd, workspace, verdict, turn)


def _prepare(req: SpawnRequest, settings: Settings | None, sid: str | None, cwd: Path,
             workspace: Path, verdict: trust.Verdict, turn: Callable[[], None] | None) -> Prepared:
    settings = settings or load_settings(workspace, owners=OWNERS)
    settings = replace(settings, model=req.default_model) if req.default_model else settings
    catalog = _catalog(req, workspace)
    req = _choose_backend(req, workspace, catalog)
    forked = _fork(req)
    if forked and req.model is None:  # the run's model: its prompt cache
        req = replace(req, model=forked["model"])
    task, timeout = _validate(req, settings)
    warnings: tuple[str, ...] = ()
    links = None
    if req.inherit is not None:
        backend = dict(req.inherit)
        links = backend.pop("trace_links", None)  # spans of other traces it follows (continue)
    else:
        backend, warnings = _backend_fields(req, workspace, settings, cwd, catalog)
    placement = _executor_fields(req, settings, bool(backend.get("team")))
    if "sandbox" not in backend:  # `continue` carries the old one's
        from zapcli.ops.sandboxing import for_spawn

        wants = ((backend.get("definition") or {}).get("sandbox") or {}).get("network") is True
        more = for_spawn(backend, req.cli, req.sandbox, req.model_shell, settings,
                         backend_for(req.cli or "zapcli", settings), network=wants)
        warnings = tuple(warnings) + more
    notice = verdict.notice(skills=req.cli in (None, "zapcli"))
    warnings = (*((notice,) if notice else ()), *settings.notes, *warnings)
    session = sessions.current()
    sid = sid or ids.new_id()
    backend.update(_extras(req, settings, cwd, sid), **({"fork": forked} if forked else {}))
    within_spawner(req.spawner, req.ask_widening, {
        "cli": req.cli, **backend, "approval": req.approval or settings.approval,
        "workspace": str(workspace), "writable_roots": list(settings.writable_roots)})
    if req.cli != "sh" or backend.get("sandbox") in ("auto", "on"):  # work under a write policy
        from zapcli.ops.sandboxing import refused

        why = refused(backend, req.cli, req.approval or settings.approval, str(workspace),
                      settings.writable_roots, bool(req.worktree))
        if why:
            raise UsageError(f"{why}. Nothing was created")
    from zapcli.ops import tree

    turn and turn()  # the spawns of one model message reserve in the order given
    placed = tree.place_or_unfunded(sid, session, str(req.cli), backend.get("model"),
                                    max_tokens=req.max_tokens, max_cost=req.max_cost,
                                    settings=settings, parent=req.parent, run=req.run,
                                    siblings=req.siblings, batch=req.batch)
    backend.update(placed.fields)
    given = placed.fields.get("budget") or {}
    own_tokens = req.max_tokens if req.cli == "sh" else _least(req.max_tokens, given.get("max_tokens"))
    now = time.time()
    stored, refs = marked(task)  # the child expands these names only: never one a caller typed
    fields = {
        "session": session, "cli": req.cli, "task": stored, "cwd": str(cwd),
        "workspace": str(workspace), "timeout_s": timeout,
        "approval": req.approval or settings.approval, "unattended": req.unattended,
        "max_tokens": own_tokens, "max_cost": _least(req.max_cost, given.get("max_cost")),
        "after": list(req.after), "mono": time.monotonic(),
        "deadline": records.iso_utc(now + timeout),
        "kill_grace_s": settings.kill_grace_s, "writable_roots": list(settings.writable_roots),
        **({"scratch_size": settings.scratch_size} if settings.scratch_size is not None else {}),
        "max_concurrent": settings.max_concurrent, "trust": verdict.frozen(),
        **backend, **placement, **({"relay": req.relay} if req.relay else {}),
        "trace": tracecontext.new(traceparent=req.traceparent, parent_id=req.parent, links=links),
        **({"secret_refs": refs} if refs else {}),
    }
    return Prepared(sid, session, fields, settings, warnings, str(req.cli), task, now, placed)


def abandon(p: Prepared) -> None:
    """A prepared spawn that will not be created: its allotment goes back."""
    from zapcli.ops import tree
    tree.undo(p.sid, p.placed)


def create(p: Prepared) -> SpawnResult:
    """Create and start (or queue) a prepared spawn. Raises ZapcliError;
    nothing of it is left behind when it does."""
    sid, session = p.sid, p.session
    if p.placed is not None and p.placed.unfunded is not None:  # its tree could not fund it
        from zapcli.ops import tree

        return tree.record_unfunded(p)
    # From here to the launch is one step for the caller: SIGINT/SIGTERM/SIGHUP
    # wait until it is done, so a caller killed mid-spawn (a harness's timeout)
    # never leaves a half-made subagent. The session marker comes first, so
    # even a SIGKILL in between leaves one that its session sees, lists, can
    # kill, and whose queue starts it.
    agentroots.note_spawn(p.fields)  # before its work runs
    held = {_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP}
    previous = _signal.pthread_sigmask(_signal.SIG_BLOCK, held)
    try:
        _add_to_session(p)
        try:
            # Not fsynced here: a runner started now fsyncs the trail with its
            # `start` record a moment later; one left queued is fsynced below.
            queue.keep_env(sid)  # whoever starts it (now, or from the queue) starts it with ours
            store.create_trail(sid, p.fields, secret_values(), sync=False)
            if sid not in queue.drain(session, p.settings):
                store.sync_file(store.path_for(sid))
        except Exception:  # nothing half-made stays behind, whatever went wrong
            store.path_for(sid).unlink(missing_ok=True)
            queue.drop_env(sid)
            sessions.forget(session, sid)
            abandon(p)
            raise
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, previous)
    from zapcli.lifecycle.observe import view_of
    from zapcli.trail.reader import load

    view = view_of(sid, load(sid))
    return SpawnResult(id=sid, status=view.status, cli=p.cli, task=display(mark(p.task)),
                       created=records.iso_utc(p.now), warnings=p.warnings, agent=view.agent,
                       budget=p.fields.get("budget"))


def _add_to_session(p: Prepared) -> None:
    """Its session's markers. When they cannot be made, any made are taken
    away and its tree's place given back; the first error is the one raised
    (the undo's own, in a folder that cannot be written, would hide it)."""
    try:
        sessions.add(p.session, p.sid, queued=queue.marker(p.fields), parent=p.fields.get("parent"))
    except Exception:
        from contextlib import suppress

        with suppress(Exception):
            sessions.forget(p.session, p.sid)
        with suppress(Exception):
            abandon(p)
        raise


def spawn(req: SpawnRequest, settings: Settings | None = None, *,
          ready: Callable[[], None] | None = None, turn: Callable[[], None] | None = None) -> SpawnResult:
    """Create and start (or queue) one subagent. Raises ZapcliError; nothing is created when it does. `turn()`
    just before its reservation, `ready()` after it: one model message's spawns reserve in order, then meet (`agent.types.Muster`)."""
    prepared = prepare(req, settings, turn=turn)
    try:
        ready and ready()
    except BaseException:
        abandon(prepared)
        raise
    res = create(prepared)
    _maybe_collect(prepared, res.status)
    return res
