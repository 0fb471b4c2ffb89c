"""`zapcli spawn`: validate, write the frozen `spawn` record, start or queue.

Imports `zapcli.lifecycle.queue`, `zapcli.lifecycle.session`, `zapcli.trail`, `zapcli.config`;
`zapcli.executors` only for a subagent that does not run on this machine.
Every check runs before anything is created: a refused spawn leaves no trail,
no marker, no process (SPEC §3 spawn).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from zapcli import ids
from zapcli.backends import NAMES as BACKENDS
from zapcli.config import APPROVAL_MODES, MAX_INT, Settings, load_settings
from zapcli.errors import UsageError, ZapcliError, either, param
from zapcli.lifecycle import queue
from zapcli.lifecycle import session as sessions
from zapcli.paths import subagents_dir, workspace_of
from zapcli.plain import plain
from zapcli.redact import display, mark, secret_values
from zapcli.trail import records, store

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

MAX_TASK_BYTES = 1024 * 1024


@plain
class SpawnRequest:
    """Arguments of one spawn. `task` is text; timeout in seconds."""

    task: str
    cli: str | None = None  # None: the definition's `cli:`, else zapcli
    agent: str | None = None
    model: str | None = None
    timeout_s: float | None = None
    approval: str | None = None
    cwd: str | None = None
    after: tuple[str, ...] = ()
    max_tokens: int | None = None
    unattended: bool = False
    worktree: bool = False  # work in a new git worktree on branch zapcli/<id> (SPEC §16)
    on_finish: str | None = None  # a shell command run once when it ends; "" = none
    output_schema: str | None = None  # a JSON Schema file the final report must satisfy
    # `zapcli continue` (`zapcli.ops.continue_` decides what): the spawn-record
    # fields carried over from the old subagent (definition, model, grant, an
    # agent CLI's backend, tree, `continue_of`...), used instead of resolving.
    inherit: dict[str, Any] | None = None
    executor: str | None = None  # None: config `executor` (default local)
    # `zapcli run` with a terminal: {pid, create_time, host} of the run that asks
    # a person about this subagent's approvals; the gate denies once it is gone
    relay: dict[str, Any] | None = None
    # Its commands in the OS sandbox (SPEC §18): None = the backend's default
    # (the built-in agent: "auto", where this machine can; sh: "off"), "on" = must
    sandbox: str | None = None


@plain
class SpawnResult:
    id: str
    status: str
    cli: str
    task: str
    created: str
    warnings: tuple[str, ...] = ()
    agent: str | None = None  # the definition, for the zapcli backend


def argv_text(text: str) -> str:
    """Text as the user typed it: under a non-UTF-8 locale (LC_ALL=C) Python
    turns argv's UTF-8 bytes into surrogate escapes; those bytes are what was
    typed, so they are decoded as UTF-8 (#12.8). Other text is unchanged."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return text  # really not UTF-8: refused below


def _require_utf8(what: str, text: str | None) -> None:
    """Everything a trail records is UTF-8 text: a value that is not (a folder
    name of other bytes, say) is refused by name, not met as a traceback."""
    if text is None:
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8 ({text.encode('utf-8', 'surrogateescape')!r}); "
                         "zapcli records it as UTF-8 text: use a UTF-8 name") from None


def decode_task(raw: bytes) -> str:
    """Task bytes (from stdin, read up to one byte past the limit) to text:
    UTF-8, at most 1 MB. Raises UsageError."""
    if len(raw) > MAX_TASK_BYTES:
        raise UsageError(f"task on stdin is more than {MAX_TASK_BYTES:,} bytes, the limit (1 MB); "
                         "put the material in a file and name the file in the task")
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")  # a BOM is not part of the task
    except UnicodeDecodeError as exc:
        raise UsageError(f"task is not valid UTF-8 (byte {exc.start}); pass UTF-8 text") from None


def _validate(req: SpawnRequest, settings: Settings) -> tuple[str, float]:
    if req.cli not in BACKENDS and req.cli not in settings.backends:
        raise UsageError(f"unknown backend '{req.cli}' for {param('cli')}; choose one of: "
                         f"{', '.join((*BACKENDS, *settings.backends))}")
    for flag, value in ((param("agent"), req.agent), (param("model"), req.model)):
        _require_utf8(flag, value)
        if value is not None and not value.strip():
            raise UsageError(f"{flag} is empty; give a name (zapcli agents list shows the "
                             f"definitions and their models) or leave {flag} out")
    task = argv_text(req.task)
    if not task or not task.strip():
        raise UsageError("the task is empty; give the work to do"
                         + either(", e.g. zapcli spawn --cli sh -- 'make test'", " in `task`"))
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
    from zapcli.plain import replace

    return replace(req, cli=definition_cli(req.agent, workspace, catalog) or "zapcli")


def _backend_fields(req: SpawnRequest, workspace: Path, settings: Settings,
                    cwd: Path, catalog: Any) -> tuple[dict, tuple[str, ...]]:
    """Definition, model and warnings for the chosen backend (resolved before any fork)."""
    from zapcli.backends.resolve import spawn_fields

    return spawn_fields(req.cli or "zapcli", agent=req.agent, model=req.model, approval=req.approval,
                        unattended=req.unattended, max_tokens=req.max_tokens,
                        workspace=workspace, settings=settings, cwd=cwd, catalog=catalog)


def _extras(req: SpawnRequest, settings: Settings, cwd: Path, sid: str) -> dict[str, Any]:
    """The SPEC §16 fields: tree receipt, on-finish command, output schema.
    Raises UsageError (before anything is created)."""
    out: dict[str, Any] = {}
    if req.worktree:
        from zapcli import worktrees
        from zapcli.worktrees.git import plan

        out["worktree"] = plan(cwd, worktrees.path_for(sid), worktrees.branch_for(sid)).to_dict()
    hook = settings.on_finish if req.on_finish is None else req.on_finish
    if hook is not None and hook.strip():
        out["on_finish"] = hook
    if req.output_schema is not None:
        from zapcli import outputschema

        out["output_schema"] = outputschema.load_schema(req.output_schema)
    return out


def _sandbox_choice(req: SpawnRequest) -> tuple[str, tuple[str, ...]]:
    """The spawn record's `sandbox` ("auto", "on", "off") and the warning when
    the built-in agent's default cannot be had here (said at once, and again
    in the trail: never a silent downgrade). Raises ZapcliError when one was
    asked for and cannot be had."""
    cli = req.cli or "zapcli"
    choice = req.sandbox or ("auto" if cli == "zapcli" else "off")
    if choice not in ("auto", "on", "off"):
        raise UsageError(f"{param('sandbox')} is one of auto, on, off; got {choice!r}")
    if choice == "on" and cli not in ("zapcli", "sh"):
        raise UsageError(f"{param('sandbox')} is for the built-in agent and --cli sh; {cli} runs "
                         "its commands its own way (README: Backends)")
    if choice == "off" or cli not in ("zapcli", "sh"):
        return "off", ()
        return choice, ()
    from zapcli.paths import state_dir
    from zapcli.sandbox import bwrap

    found = bwrap.cached(state_dir())
    if found.ok:
        return choice, ()
    if choice == "on":
        raise ZapcliError(f"{param('sandbox')} was asked for, but {found.missing}; {found.fix}. "
                          "Nothing was created", code="no_sandbox")
    return choice, (bwrap.unavailable(found),)


def _executor_fields(req: SpawnRequest, settings: Settings) -> dict:
    """`executor` and its frozen settings for the spawn record; the executor
    checks it can launch now (a cluster that does not answer: one line, exit
    1, nothing created). A local subagent imports no executor."""
    name = req.executor or settings.executor
    if name == "local":
        return {}
    from zapcli import executors

    if name not in executors.NAMES:
        raise UsageError(f"unknown {param('executor')} '{name}'; choose one of: {', '.join(executors.NAMES)}")
    options = dict(getattr(settings, name, None) or {})
    fields = {"executor": name, **executors.get(name).check(options)}
    if options.get("max_concurrent") is not None:  # a cap of its own, counted over its own pool
        fields.update(max_concurrent=options["max_concurrent"], pool=name)
    return fields


def _maybe_collect(settings: Settings) -> None:
    """Retention, opportunistically (SPEC §6.3): only when the folder holds more
    subagents than `max_kept`, counted by one directory listing, so a normal
    spawn pays nothing. The run itself is skipped while any subagent runs."""
    if not settings.max_kept:
        return
    try:
        count = sum(1 for n in os.listdir(subagents_dir()) if n.endswith(".jsonl"))
    except OSError:
        return
    if count > settings.max_kept:
        from zapcli.lifecycle.retention import collect

        collect(settings, opportunistic=True)


def spawn(req: SpawnRequest, settings: Settings | None = None) -> SpawnResult:
    """Create and start (or queue) one subagent. Raises ZapcliError; nothing is
    created when it does."""
    if req.cwd is not None and not Path(req.cwd or "\0").is_dir():
        raise UsageError(f"{param('cwd')} {req.cwd!r} is not a directory")
    try:
        cwd = Path(req.cwd or os.getcwd()).resolve()
    except FileNotFoundError:
        raise UsageError("the current directory no longer exists; cd to an existing one or pass --cwd") from None
    _require_utf8("the working folder's path" if req.cwd is None else param("cwd"), str(cwd))
    _require_utf8(param("on_finish"), req.on_finish)
    workspace = workspace_of(cwd)
    settings = settings or load_settings(workspace)
    catalog = _catalog(req, workspace)
    req = _choose_backend(req, workspace, catalog)
    task, timeout = _validate(req, settings)
    warnings: tuple[str, ...] = ()
    if req.inherit is not None:
        backend = dict(req.inherit)
    else:
        backend, warnings = _backend_fields(req, workspace, settings, cwd, catalog)
    placement = _executor_fields(req, settings)
    if "sandbox" not in backend:  # `continue` carries the old one's
        backend["sandbox"], more = _sandbox_choice(req)
        warnings = tuple(warnings) + more
    warnings = tuple(settings.notes) + tuple(warnings)
    session = sessions.current()
    sid = ids.new_id()
    backend.update(_extras(req, settings, cwd, sid))
    now = time.time()
    fields = {
        "session": session, "cli": req.cli, "task": mark(task), "cwd": str(cwd),
        "workspace": str(workspace), "timeout_s": timeout,
        "approval": req.approval or settings.approval, "unattended": req.unattended,
        "max_tokens": req.max_tokens, "after": list(req.after), "mono": time.monotonic(),
        "deadline": records.iso_utc(now + timeout),
        "kill_grace_s": settings.kill_grace_s, "writable_roots": list(settings.writable_roots),
        "max_concurrent": settings.max_concurrent,
        **backend, **placement, **({"relay": req.relay} if req.relay else {}),
    }
    # From here to the launch is one step for the caller: SIGINT/SIGTERM/SIGHUP
    # wait until it is done, so a caller killed mid-spawn (a harness's timeout)
    # never leaves a half-made subagent. The session marker comes first, so
    # even a SIGKILL in between leaves one that its session sees, lists, can
    # kill, and whose queue starts it.
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        sessions.add(session, sid)
        try:
            store.create_trail(sid, fields, secret_values())
            queue.drain(session, settings)
        except Exception:  # nothing half-made stays behind, whatever went wrong
            store.path_for(sid).unlink(missing_ok=True)
            sessions.forget(session, sid)
            raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    _maybe_collect(settings)
    from zapcli.lifecycle.observe import load, view_of

    view = view_of(sid, load(sid))
    return SpawnResult(id=sid, status=view.status, cli=str(req.cli), task=display(mark(task)),
                       created=records.iso_utc(now), warnings=warnings, agent=view.agent)
