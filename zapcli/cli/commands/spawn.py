"""`zapcli spawn`: start a subagent and print its id."""

from __future__ import annotations

from zapcli.cli.output import StdoutError, emit, emit_text, is_tty, text_from_stdin, warn
from zapcli.ops.spawn import SpawnRequest, SpawnResult, spawn


def execute(task: str, cli: str | None = None, agent: str | None = None, model: str | None = None,
            timeout: float | None = None, approval: str | None = None, cwd: str | None = None,
            after: list[str] | None = None, max_tokens: int | None = None,
            unattended: bool = False, worktree: bool = False, on_finish: str | None = None,
            output_schema: str | None = None, executor: str | None = None,
            attempts: int | None = None, attempt_cli: list[str] | None = None,
            attempt_model: list[str] | None = None, max_cost: float | None = None,
            sandbox: bool = False, no_sandbox: bool = False, trust: bool = False,
            on_event: list[str] | None = None, resume_after_limit: bool = False,
            json: bool = False) -> int:
    choice = sandbox_choice(sandbox, no_sandbox)
    if task == "-":
        task = text_from_stdin()
    req = SpawnRequest(task=task, cli=cli, agent=agent, model=model, timeout_s=timeout,
                       approval=approval, cwd=cwd, after=tuple(after or ()),
                       max_tokens=max_tokens, unattended=unattended, worktree=worktree,
                       on_finish=on_finish, output_schema=output_schema, executor=executor,
                       max_cost=max_cost, sandbox=choice, trust=trust,
                       on_event=event_hooks(on_event), resume_after_limit=resume_after_limit)
    if attempts is not None or attempt_cli or attempt_model:
        from zapcli.ops.attempts import spawn_attempts

        return print_attempts(spawn_attempts(req, attempts, attempt_cli, attempt_model), json)
    return print_spawned(spawn(req), json)


def print_attempts(results: list[SpawnResult], json: bool) -> int:
    """The siblings' ids, one a line (a pipe), or their summary (a terminal, --json)."""
    for w in dict.fromkeys(w for r in results for w in r.warnings):
        warn(w)
    if json or is_tty():
        from zapcli.render import attempts as render

        emit(json, render.spawned_doc, render.spawned_lines, results)
    else:
        emit_text("".join(r.id + "\n" for r in results))
    return 0


def event_hooks(items: list[str] | None) -> dict[str, str] | None:
    """`--on-event EVENT=CMD`, each given once, as {event: command}."""
    if not items:
        return None
    from zapcli.errors import UsageError

    out: dict[str, str] = {}
    for item in items:
        event, sep, command = item.partition("=")
        event = event.strip()
        if not sep or not event:
            raise UsageError(f"--on-event takes EVENT=CMD, e.g. --on-event 'needs_input=notify-send "
                             f"zapcli \"$ZAPCLI_ID needs you\"'; got {item!r}")
        if event in out:
            raise UsageError(f"--on-event {event} is given twice; give each event once")
        out[event] = command
    return out


def sandbox_choice(sandbox: bool, no_sandbox: bool) -> str | None:
    """--sandbox / --no-sandbox as the op's "on" / "off" (None: the default)."""
    if sandbox and no_sandbox:
        from zapcli.errors import UsageError

        raise UsageError("--sandbox and --no-sandbox contradict each other; give one of them")
    return "on" if sandbox else "off" if no_sandbox else None


def print_spawned(res: SpawnResult, json: bool) -> int:
    """The id (a pipe) or the summary (a terminal, --json), as spawn and continue print it."""
    for w in res.warnings:
        warn(w)
    try:
        if json or is_tty():
            from zapcli.render import spawn as render

            emit(json, render.doc, render.lines, res)
        else:  # scripts: `id=$(zapcli spawn …)` gets exactly the id
            emit_text(res.id + "\n")
    except StdoutError as exc:  # it runs: the id must not be lost with the output
        raise StdoutError(f"{res.id} was started, but its id could not be printed "
                          f"({exc.message})") from None
    return 0
