"""Attempts (#23): `spawn --attempts N` starts N siblings on one task, each
in its own tree (varied by `--attempt-cli` / `--attempt-model`);
`zapcli attempts ID` compares them — status, diff stat, tokens, cost, the
stale-base note, and the result of `--check CMD` run in each finished tree
(as a model's shell runs: sandboxed, keyless — `Check`), which leaves
nothing in the tree: it is an evaluation, not part of the attempt
(`zapcli.worktrees.untouched`).

Imports `zapcli.ops.spawn`, `zapcli.ops.diff`, `zapcli.lifecycle`,
`zapcli.worktrees`. The siblings' ids are chosen first and every one is
checked and resolved before any is created: a refusal creates none. Each
spawn record carries `attempts: {ids, index}`, so any sibling's id finds
the others. `pick` (`zapcli.ops.pick`) merges the chosen one.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from zapcli import ids as idmod
from zapcli.errors import NotFound, UsageError, ZapcliError, param
from zapcli.lifecycle import treework
from zapcli.lifecycle.observe import load, observe
from zapcli.ops.spawn import SpawnRequest, SpawnResult, abandon, create, prepare
from zapcli.plain import field, plain, replace
from zapcli.trail import store

MAX_ATTEMPTS = 16
CHECK_TIMEOUT_S = 600.0  # a `--check` command's time limit, per tree


def _variants(n: int | None, clis: list[str], models: list[str]) -> int:
    """How many siblings: `n`, or as many as the longest list. Raises UsageError."""
    longest = max(len(clis), len(models))
    count = n if n is not None else longest
    if count is None or not 1 <= count <= MAX_ATTEMPTS:
        raise UsageError(f"{param('attempts')} must be between 1 and {MAX_ATTEMPTS}, got {n}")
    if count < longest:
        raise UsageError(f"{param('attempts')} {count} is fewer than the {longest} values given to "
                         f"{param('attempt_cli') if len(clis) == longest else param('attempt_model')}; "
                         "each value is used in turn, so give at least as many attempts")
    return count


def _split(values: list[str] | tuple[str, ...] | None) -> list[str]:
    """`claude,codex` and repeated flags alike, empty items dropped."""
    return [v.strip() for item in values or () for v in item.split(",") if v.strip()]


def spawn_attempts(req: SpawnRequest, n: int | None, clis: list[str] | None = None,
                   models: list[str] | None = None) -> list[SpawnResult]:
    """Start the siblings of `req` (each in its own tree). Raises ZapcliError
    before any is created."""
    cli_list, model_list = _split(clis), _split(models)
    if cli_list and req.cli:
        raise UsageError(f"{param('cli')} and {param('attempt_cli')} both choose the backend; "
                         "give one")
    if model_list and req.model:
        raise UsageError(f"{param('model')} and {param('attempt_model')} both choose the model; "
                         "give one")
    count = _variants(n, cli_list, model_list)
    siblings = [idmod.new_id() for _ in range(count)]
    prepared = []
    for i, sid in enumerate(siblings):
        variant = replace(req, worktree=True, attempt={"ids": siblings, "index": i + 1},
                          cli=cli_list[i % len(cli_list)] if cli_list else req.cli,
                          model=model_list[i % len(model_list)] if model_list else req.model)
        try:
            prepared.append(prepare(variant, sid=sid))
        except BaseException as exc:  # a refusal creates none: the others' allotments go back
            for p in prepared:
                abandon(p)
            if isinstance(exc, UsageError) and exc.template.startswith(param("worktree")):
                # said of what was asked: attempts, each in a worktree (not a --worktree never given)
                raise UsageError(exc.template.replace(param("worktree"), f"{param('attempts')} (each "
                                                      "attempt works in a git worktree of its own)", 1),
                                 code=exc.code) from None
            raise
    return [create(p) for p in prepared]


@plain
class Attempt:
    id: str
    index: int
    view: Any = None  # lifecycle View; None when the subagent was removed
    model: str | None = None
    diff: dict[str, int] | None = None  # files, insertions, deletions
    stale: dict[str, Any] | None = None
    merged: dict[str, Any] | None = None  # its `merged` record, once merged
    check: dict[str, Any] | None = None  # --check: exit_code, ok, output, ms (or not_run: why)
    missing: str | None = None  # why there is nothing to compare


@plain
class AttemptsResult:
    task: str
    attempts: list[Attempt] = field(default_factory=list)
    check: str | None = None


def siblings_of(sid: str) -> list[str]:
    """Every sibling id of `sid` (itself included), in their order. Raises
    NotFound / ZapcliError for a subagent spawned without --attempts."""
    sid = store.resolve(sid)
    group = load(sid).spawn.raw.get("attempts")
    siblings = group.get("ids") if isinstance(group, dict) else None
    if not isinstance(siblings, list) or not all(isinstance(x, str) and idmod.is_valid(x)
                                                 for x in siblings):
        raise ZapcliError(f"{sid} was not spawned with --attempts, so it has no siblings to "
                          "compare (zapcli diff shows its own work)", code="no_attempts")
    return siblings


def _one(sid: str, index: int) -> Attempt:
    from zapcli.ops.diff import summary
    from zapcli.worktrees.stale import note

    a = Attempt(sid, index)
    try:
        a.view = observe(sid)
        s = load(sid)
    except NotFound:
        a.missing = "removed (zapcli rm)"
        return a
    a.model, a.merged = s.spawn.model, s.merged
    work = treework.safe_of(sid)
    if work is None or work.commit is None:
        a.missing = (work.missing if work else None) or "no tree yet"
        return a
    a.diff = summary(work)
    a.stale = note(work.receipt, work.commit)
    return a


@plain
class Check:
    """How a check runs. It is code an agent wrote (the tree's Makefile,
    tests, hooks) run by a command someone chose, so it runs as a model's
    shell runs: in the sandbox (`sandbox`: "auto" where this machine can,
    "on" or refused, "off"), with the environment a model's bash gets — no
    key unless named in `keep` (`zapcli.backends.shell.model_shell_env`)."""
    command: str
    sandbox: str = "auto"
    keep: tuple[str, ...] = ()


def _check(a: Attempt, check: Check) -> None:
    import shutil

    from zapcli.backends.sandboxed import after_it
    from zapcli.backends.shell import model_shell_env
    from zapcli.worktrees import git as g
    from zapcli.worktrees import hooks

    if a.view is None or not a.view.terminal:
        a.check = {"not_run": f"it is {a.view.status if a.view else 'removed'}"}
        return
    spawn = load(a.id).spawn
    r = g.Receipt.from_dict(spawn.worktree)
    where = (r.cwd if os.path.isdir(r.cwd) else r.path) if r is not None else ""
    if r is None or not where or not os.path.isdir(where):
        a.check = {"not_run": "its tree is gone"}
        return
    scratch = store.path_for(a.id, store.TMP)
    try:
        # as the runner points its work at the tree (`zapcli.runner.tree.enter`): the tree is the
        # workspace, never the checkout it was made from
        box = after_it(replace(spawn, cwd=where, workspace=r.path), check.sandbox, scratch)
        if isinstance(box, str):
            a.check = {"not_run": f"{box}; nothing was run"}
            return
        starts, held, notes = box
        env = {**(model_shell_env({"env": list(check.keep)}) or {}), "ZAPCLI_ID": a.id,
               "ZAPCLI_WORKTREE": r.path}
        try:
            ran = hooks.run(check.command, where, env, CHECK_TIMEOUT_S, box=starts)
        finally:
            if held is not None:
                held.release()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    a.check = {**ran.to_dict(), "summary": "passed" if ran.ok else ran.failure(),
               "sandboxed": starts is not None, "notes": notes}


def _check_leaving_nothing(a: Attempt, check: Check) -> None:
    """`_check`, with the tree noted and its work stored before, and put back
    after: nothing the check writes stays (`zapcli.worktrees.untouched`). A
    tree that cannot be read so is not checked."""
    from zapcli.worktrees import git as g
    from zapcli.worktrees.untouched import hold, put_back

    try:
        r = (g.Receipt.from_dict(load(a.id).spawn.worktree)
             if a.view is not None and a.view.terminal else None)
    except NotFound:
        r = None
    if r is None or not os.path.isdir(r.path):
        _check(a, check)  # it says why nothing runs
        return
    try:
        kept = hold(r.tree())
    except g.GitError as exc:
        a.check = {"not_run": f"its tree could not be read, to put it back after the check: "
                              f"{exc.message}"}
        return
    try:
        _check(a, check)
    finally:
        try:
            left = put_back(kept)
        except (g.GitError, OSError) as exc:
            left = [str(getattr(exc, "message", exc))]
    if a.check is not None and left:
        a.check["notes"] = [*a.check.get("notes", ()), *(f"after the check: {n}" for n in left)]


def compare(sid: str, *, check: str | Check | None = None) -> AttemptsResult:
    """The siblings of `sid` side by side; with `check`, that command's result
    in each finished tree (run at once, a few at a time; as `Check` says, a
    plain command: sandboxed where this machine can, keyless). Raises ZapcliError."""
    how = Check(check) if isinstance(check, str) else check
    if how is not None and not how.command.strip():
        raise UsageError(f"{param('check')} is empty; give the command to run in each tree, "
                         "e.g. 'make test'")
    siblings = siblings_of(sid)
    res = AttemptsResult(task="", check=how.command if how else None)
    with ThreadPoolExecutor(max_workers=min(len(siblings), 4)) as pool:
        res.attempts = list(pool.map(lambda p: _one(p[1], p[0] + 1), enumerate(siblings)))
        if how is not None:
            list(pool.map(lambda a: _check_leaving_nothing(a, how), res.attempts))
    res.task = next((a.view.task for a in res.attempts if a.view is not None), "")
    return res
