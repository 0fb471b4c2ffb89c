"""The blocking verbs of the Python API: each is the CLI command's op
(`zapcli.ops`) and its JSON renderer (`zapcli.render`), returning a typed
result (`zapcli.api.results`).

Imports `zapcli.ops`, `zapcli.render`, `zapcli.lifecycle`, `zapcli.config`;
never the CLI (typer, rich) or the agent. Parameters are the CLI's options
as keyword arguments (`--wait-secs` is `wait_secs`); an error is a
`ZapcliError` whose message names parameters as Python spells them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from os import PathLike
from typing import Any, TypeVar

from zapcli.api.results import (
    CapturedOutput,
    Decision,
    Killed,
    KillResult,
    Listing,
    PollResult,
    Sent,
    Spawned,
    Subagent,
    WaitResult,
)
from zapcli.config import Settings
from zapcli.errors import NotFound, UsageError, ZapcliError

F = TypeVar("F", bound=Callable[..., Any])
Ids = str | Iterable[str]


def spelled(fn: F) -> F:
    """Errors say parameters as Python spells them (`wait_secs`, not
    `--wait-secs`); the exception's class and code stay."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ZapcliError as exc:
            raise respelled(exc) from None
    return call  # type: ignore[return-value]


def respelled(exc: ZapcliError) -> ZapcliError:
    """`exc` with its message spelled for Python callers."""
    again = type(exc).__new__(type(exc))
    again.__dict__.update(exc.__dict__)
    again.template = exc.for_tool()
    again.args = (again.template,)
    return again


def settings() -> Settings:
    """The effective settings, loaded leniently: a typo in config.yaml never
    stands between a program and looking at or stopping its subagents
    (`Settings.problems` says what was skipped)."""
    from zapcli.backends.sections import OWNERS
    from zapcli.config import load_settings

    return load_settings(lenient=True, owners=OWNERS)


def as_printed(doc: dict[str, Any]) -> dict[str, Any]:
    """A renderer's document as `--json` prints it: plain JSON values (a
    status as its string, a tuple as a list), through the CLI's encoder."""
    import orjson

    return orjson.loads(orjson.dumps(doc, default=str))  # type: ignore[no-any-return]


def id_list(ids: Ids | None, name: str = "ids") -> list[str]:
    """One id or several, as a list; a UsageError naming `name` for anything
    else (an int, bytes, a list holding one: it was a TypeError, or each
    byte taken for an id)."""
    if ids is None:
        return []
    if isinstance(ids, str):
        return [ids]
    what = "a subagent id (a string) or a list of them"
    if isinstance(ids, (bytes, bytearray, dict)) or not hasattr(ids, "__iter__"):
        _typed(name, ids, (), what)
    found = list(ids)
    for one in found:
        _typed(name, one, (str,), what)
    return found


def given_ids(ids: Ids | None) -> list[str] | None:
    """The ids a caller gave: None when it gave none (the verb's default, e.g.
    the session's for `wait`); an empty list or tuple is an empty list —
    nothing to look at, never "all of them" (a script whose list happened to
    be empty must not wait on work it never started)."""
    return None if ids is None else id_list(ids)


def existing(ids: list[str], runs: bool = False) -> list[str]:
    """`ids`, each resolved; NotFound naming each one that names no subagent
    (before anything is done to the others). `runs`: a `zapcli run`'s id
    that exists is kept too."""
    from zapcli.trail import runs as run_trails
    from zapcli.trail import store

    found, missing = [], []
    for value in ids:
        if runs and run_trails.exists(value):
            found.append(value)
            continue
        try:
            path = store.path_for(value)
        except NotFound as exc:
            missing.append(exc.message)
            continue
        if path.exists() or path.is_symlink():  # a damaged or planted one is kill's to say
            found.append(path.name[:-len(".jsonl")])
        else:
            missing.append(f"{path.name[:-len('.jsonl')]} does not exist")
    if missing:
        raise NotFound("; ".join(missing))
    return found


_SECONDS = ((int, float), "a number of seconds or None")
_FLAG = ((bool,), "True or False")
_OPTIONS: dict[str, tuple[tuple[type, ...], str]] = {
    "wait_secs": _SECONDS, "timeout": _SECONDS, "grace": _SECONDS,
    "limit": ((int,), "a whole number or None"), "no_wait": _FLAG, "any": _FLAG, "all": _FLAG,
    "stderr": _FLAG, "text": ((str,), "a string"), "req": ((str,), "a request id (r1) or None"),
    "reason": ((str,), "a string or None")}


def checked(**given: Any) -> None:
    """A verb's options of the wrong type are a UsageError naming them, as
    spawn's are (a string for a number was a TypeError from deep inside;
    None is each one's default, or says it is missing)."""
    for name, value in given.items():
        if value is not None:
            _typed(name, value, *_OPTIONS[name])


def _typed(name: str, value: Any, kinds: tuple[type, ...], what: str) -> None:
    """A UsageError naming `name` when `value` is none of `kinds` (a bool is
    no number here)."""
    number = any(k in (int, float) for k in kinds)
    if not isinstance(value, kinds) or (number and isinstance(value, bool) and bool not in kinds):
        raise UsageError(f"`{name}` must be {what}, got {type(value).__name__} {value!r:.60}")


def _request(task: str, *, cli: str | None, agent: str | None, model: str | None,
             timeout: float | None, approval: str | None, cwd: str | PathLike[str] | None,
             after: Ids | None, max_tokens: int | None, max_cost: float | None,
             unattended: bool, worktree: bool, on_finish: str | None,
             output_schema: str | dict[str, Any] | None, executor: str | None,
             sandbox: bool | None) -> Any:
    from zapcli.ops.spawn import SpawnRequest

    text, number, none = (str,), (int, float), (type(None),)
    checks: list[tuple[str, Any, tuple[type, ...], str]] = [
        ("task", task, text, "a string (the task, or the shell command with cli='sh')"),
        *((n, v, text + none, "a string or None") for n, v in (
            ("cli", cli), ("agent", agent), ("model", model), ("approval", approval),
            ("on_finish", on_finish), ("executor", executor))),
        ("timeout", timeout, number + none, "a number or None"),
        ("max_cost", max_cost, number + none, "a number or None"),
        ("max_tokens", max_tokens, (int, type(None)), "a whole number or None"),
        ("cwd", cwd, (str, PathLike, type(None)), "a path or None"),
        ("output_schema", output_schema, (str, dict, type(None)),
         "a JSON Schema (a dict, its JSON text or a file's path) or None"),
        ("unattended", unattended, (bool,), "True or False"),
        ("worktree", worktree, (bool,), "True or False"),
        ("sandbox", sandbox, (bool, type(None)), "True, False or None")]
    for name, value, kinds, what in checks:
        _typed(name, value, kinds, what)
    return SpawnRequest(
        task=task, cli=cli, agent=agent, model=model, timeout_s=timeout, approval=approval,
        cwd=None if cwd is None else str(cwd), after=tuple(id_list(after, "after")), max_tokens=max_tokens,
        unattended=unattended, worktree=worktree, on_finish=on_finish,
        output_schema=output_schema, executor=executor, max_cost=max_cost,
        sandbox=None if sandbox is None else ("on" if sandbox else "off"))


@spelled
def spawn(task: str, *, cli: str | None = None, agent: str | None = None,
          model: str | None = None, timeout: float | None = None, approval: str | None = None,
          cwd: str | PathLike[str] | None = None, after: Ids | None = None,
          max_tokens: int | None = None, max_cost: float | None = None,
          unattended: bool = False, worktree: bool = False, on_finish: str | None = None,
          output_schema: str | dict[str, Any] | None = None, executor: str | None = None,
          sandbox: bool | None = None) -> Spawned:
    """Start a subagent in the background (as `zapcli spawn`); returns at once.

    `cli`: the backend (`"zapcli"`, the built-in agent, by default; `"sh"`
    runs `task` as a shell command; `"claude"`, `"codex"`, ...). `timeout`
    in seconds; `after`: ids it starts after; `output_schema`: a JSON Schema
    (a dict, its JSON text, or a file) the final report must satisfy;
    `sandbox`: True must run in the OS sandbox, False never, None the
    backend's default. Raises UsageError for bad arguments, ZapcliError when
    it cannot start; nothing is created then."""
    from zapcli.ops.spawn import spawn as do_spawn
    from zapcli.render import spawn as render

    doc = as_printed(render.doc(do_spawn(_request(
        task, cli=cli, agent=agent, model=model, timeout=timeout, approval=approval, cwd=cwd,
        after=after, max_tokens=max_tokens, max_cost=max_cost, unattended=unattended,
        worktree=worktree, on_finish=on_finish, output_schema=output_schema, executor=executor,
        sandbox=sandbox))))
    return Spawned.from_record(doc, doc)


@spelled
def spawn_attempts(task: str, attempts: int | None = None, *,
                   attempt_cli: Iterable[str] | None = None,
                   attempt_model: Iterable[str] | None = None, **options: Any) -> tuple[Spawned, ...]:
    """Start `attempts` attempts at one task, each in its own worktree (as
    `zapcli spawn --attempts N`); `attempt_cli` / `attempt_model` are used in
    turn. `options` are `spawn`'s. Compare them with `zapcli attempts`."""
    from zapcli.ops.attempts import spawn_attempts as do_attempts
    from zapcli.render import attempts as render

    known = ("cli", "agent", "model", "timeout", "approval", "cwd", "after", "max_tokens",
             "max_cost", "unattended", "worktree", "on_finish", "output_schema", "executor",
             "sandbox")
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"spawn_attempts() got unexpected keyword argument(s): {', '.join(unknown)}")
    given: dict[str, Any] = {k: options.get(k) for k in known}
    given["unattended"], given["worktree"] = bool(given["unattended"]), bool(given["worktree"])
    results = do_attempts(_request(task, **given), attempts,
                          list(attempt_cli) if attempt_cli else None,
                          list(attempt_model) if attempt_model else None)
    doc = as_printed(render.spawned_doc(results))
    return tuple(Spawned.from_record(rec, doc) for rec in doc["subagents"])


def _missing(entries: list[Any]) -> None:
    gone = [e for e in entries if e.view is None]
    if gone:
        raise NotFound("; ".join(str(e.error) for e in gone))


def poll_result(res: Any) -> PollResult:
    """The typed `poll` answer of an op's result. Raises NotFound for an id
    that does not exist (its message names each)."""
    from zapcli.render import poll as render

    _missing(res.entries)
    doc = as_printed(render.doc(res))
    return PollResult(tuple(Subagent.from_record(r) for r in doc["subagents"]),
                      doc["waited_s"], doc)


@spelled
def poll(ids: Ids, *, wait_secs: int | None = None, no_wait: bool = False) -> PollResult:
    """Status and output so far of each subagent (as `zapcli poll`): waits
    up to 5 s + `wait_secs` (0-30) for them to end or ask for approval;
    `no_wait` looks once; an empty list: none, at once. Raises NotFound for
    an id that does not exist."""
    from zapcli.ops.poll import poll as do_poll
    from zapcli.ops.poll import poll_plan
    from zapcli.ops.poll import poll_result as empty

    checked(wait_secs=wait_secs, no_wait=no_wait)
    asked = id_list(ids)
    if ids is not None and not asked:
        poll_plan(["-"], wait_secs=wait_secs, no_wait=no_wait)  # its options checked all the same
        return poll_result(empty([], 0.0))
    return poll_result(do_poll(asked, settings(), wait_secs=wait_secs, no_wait=no_wait))


def wait_result(res: Any) -> WaitResult:
    from zapcli.render import wait as render

    doc = as_printed(render.doc(res))
    return WaitResult(tuple(Subagent.from_record(r) for r in doc["subagents"]),
                      doc["timed_out"], doc["waited_s"], doc["exit_code"], doc)


@spelled
def wait(ids: Ids | None = None, *, timeout: float | None = None,
         any: bool = False) -> WaitResult:  # noqa: A002 - the CLI's --any
    """Block until every subagent in `ids` has ended (`any`: one of them),
    or `timeout` seconds pass (0: look once); `ids` None: every subagent of
    this session that has not ended; an empty list: nothing to wait for, at
    once. Woken by an end at once (inotify), not by polling. Raises NotFound
    for an id that does not exist."""
    from zapcli.ops.poll import outstanding
    from zapcli.ops.poll import wait as do_wait

    checked(timeout=timeout, any=any)
    asked = given_ids(ids)
    return wait_result(do_wait(outstanding() if asked is None else asked, settings(),
                               timeout_s=timeout, any_=any))


@spelled
def list_(*, all: bool = False, status: str | Sequence[str] | None = None,  # noqa: A002 - the CLI's --all
          limit: int | None = None) -> Listing:
    """This session's subagents, newest first (as `zapcli list`); `all`:
    every session's; `status`: only those of this status (a list: of any
    of those); `limit`: the newest that many
    (None: 20, as the CLI; 0: every one)."""
    from zapcli.ops.listing import list_subagents
    from zapcli.render import listing as render

    checked(all=all, limit=limit)
    res = list_subagents(settings(), all_sessions=all, status=status, limit=limit)
    doc = as_printed(render.doc(res))
    return Listing(tuple(Subagent.from_record(r) for r in doc["subagents"]), doc["session"],
                   doc["more"], doc)


@spelled
def kill(ids: Ids | None = None, *, all: bool = False,  # noqa: A002 - the CLI's --all
         grace: float | None = None) -> KillResult:
    """Stop subagents and their whole process trees (SIGTERM, SIGKILL after
    `grace` seconds); `all`: every running and queued one of this session;
    an empty list: none; a `zapcli run`'s id (run_…): that run and its
    subagents (SIGTERM, as `zapcli kill run_…`). Each id answers on its own (`Killed.outcome`:
    "cancelled", "already completed", ...). Raises NotFound, stopping none,
    when an id does not exist."""
    from zapcli.ops.kill import kill as do_kill
    from zapcli.render import kill as render

    checked(all=all, grace=grace)
    asked = given_ids(ids)
    if asked is not None and not asked and not all:
        return KillResult((), as_printed(render.doc([])))
    doc = as_printed(render.doc(do_kill(existing(asked or [], runs=True), settings(), grace_s=grace,
                                        all_=all, runs=True)))
    return KillResult(tuple(Killed(e["id"], e["outcome"], e["pid"], e["signals"], e["error"])
                            for e in doc["subagents"]), doc)


@spelled
def output(id: str, *, stderr: bool = False) -> CapturedOutput:  # noqa: A002 - the CLI's ID
    """The whole captured stdout (or stderr) of one subagent, unfolded, as
    far as it got. Raises NotFound."""
    from zapcli.lifecycle.observe import observe
    from zapcli.ops.output import chunks
    from zapcli.render import output as render
    from zapcli.trail.store import resolve

    checked(stderr=stderr)
    sid = resolve(id)
    data = b"".join(chunks(sid, stderr=stderr, settings=settings))
    view = observe(sid)
    doc = as_printed(render.doc(sid, stderr, data,
                                view.stderr_written if stderr else view.stdout_written))
    return CapturedOutput(sid, doc["stream"], doc["text"], data, doc["written_bytes"],
                          doc["truncated"], doc)


@spelled
def send(id: str, text: str) -> Sent:  # noqa: A002 - the CLI's ID
    """Steer a running subagent: `text` reaches its model before its next
    model call. Raises ZapcliError when it has ended or takes no messages."""
    from zapcli.ops.steer import send as do_send
    from zapcli.render import messages as render

    checked(text=text)
    doc = as_printed(render.sent_doc(do_send(id, text)))
    return Sent(doc["id"], doc["steer_id"], str(doc["status"]), doc)


@spelled
def approve(id: str, req: str | None = None) -> Decision:  # noqa: A002 - the CLI's ID
    """Approve a subagent's pending approval request (`req`: its id; None:
    the one pending). It resumes within 500 ms."""
    return _decide(id, req, True, None)


@spelled
def deny(id: str, req: str | None = None, reason: str | None = None) -> Decision:  # noqa: A002
    """Deny a subagent's pending approval request; its model is told `reason`."""
    return _decide(id, req, False, reason)


def _decide(sid: str, req: str | None, yes: bool, reason: str | None) -> Decision:
    from zapcli.ops.steer import decide
    from zapcli.render import messages as render

    checked(req=req, reason=reason)
    doc = as_printed(render.decided_doc(decide(sid, req, yes, reason)))
    return Decision(doc["id"], doc["req_id"], doc["decision"], doc["tool"], doc["summary"], doc)
