"""The runner's side of `--worktree`: make (or, for a continued subagent,
take over) the subagent's tree before its work starts, prepare it, and
point the work at it.

Imports `zapcli.worktrees`, `zapcli.trail`, `zapcli.backends.sandboxed`,
`zapcli.agentroots`. The tree is made here, in the runner, not in `spawn`: `spawn` stays a ~50 ms command that prints the id at
once (a checkout of a large repository takes far longer), a queued or
`--after` subagent holds no tree while it waits, and a failure ends the
subagent `failed` with git's message like any other failure of its work.
The base commit is fixed at spawn time, so the tree starts from the HEAD
the caller saw, however long the subagent was queued.

A tree made (or made again) is prepared before the task: the files
`.worktreeinclude` names are copied in, then `worktree.setup` (frozen from
the user's config.yaml at spawn) runs in it, under the subagent's deadline,
its output into the subagent's stderr — in a tree made again from a
continued subagent's branch (agent work's files) in the sandbox that work
had (`zapcli.backends.sandboxed.tree_box`), and in a new tree of a
repository that lies below a folder agent work was given to write in
(`zapcli.agentroots.repo_worked`: `sub/.git` a sandboxed subagent made, its
commits that work's) or that `.worktreeinclude` copied a file into from
such a folder (`written`: the checkout given to a subagent without
`--worktree`; the ignored files it names are no control file) always
sandboxed (`made_box`), or not at all where no sandbox can be had; as the
person only in the person's own checkout with nothing agent work wrote. A
setup that fails ends the subagent
`failed` with that output, and nothing of the task runs. A tree taken over
as it is (`reused`) was prepared already.
"""

from __future__ import annotations

import os
import threading
import time

from zapcli import plain
from zapcli.trail.model import Outcome, SpawnRecord, Status

TYPE_CHECKING = False  # `typing` costs ~2 ms of every runner's start; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.trail.writer import TrailWriter

INCLUDED_LISTED = 20  # paths named in the `worktree` record


def enter(spawn: SpawnRecord, writer: TrailWriter, err: Any = None, deadline: float = 0.0,
          stop: threading.Event | None = None) -> tuple[SpawnRecord, Outcome | None]:
    """(the spawn record as the work sees it, None) once the tree is ready —
    its `cwd` and `workspace` are in the tree — or (spawn, a `failed`
    outcome) when the tree could not be made or prepared; then the work
    never starts (and never in the main checkout)."""
    if not spawn.worktree:  # the common case: no tree, nothing of git to import
        return spawn, None
    from zapcli.worktrees import git as g
    from zapcli.worktrees.create import attach, create

    r = g.Receipt.from_dict(spawn.worktree)
    if r is None:
        return spawn, None
    started = time.monotonic()
    waited = 0.0
    try:
        if (spawn.worktree or {}).get("carried"):
            how = attach(r, tip=(spawn.worktree or {}).get("tip"))
        else:
            waited = create(r)
            how = "created"
    except g.GitError as exc:
        writer.write_sync("worktree", {**r.to_dict(), "ok": False, "error": exc.message})
        return spawn, Outcome(Status.FAILED, None, f"worktree: git worktree add failed: {exc.message}")
    included, problem = _include(r) if how != "reused" else ([], None)  # (source, path in tree)
    writer.write_sync("worktree", {**r.to_dict(), "ok": True, "how": how,
                                   "ms": int((time.monotonic() - started) * 1000),
                                   "lock_wait_ms": int(waited * 1000),
                                   **({"included": len(included),
                                       "included_paths": [p for _, p in included[:INCLUDED_LISTED]]}
                                      if included else {})})
    if problem:
        return spawn, Outcome(Status.FAILED, None, f"worktree: {problem}")
    setup = (spawn.worktree or {}).get("setup")
    if how != "reused" and isinstance(setup, str) and setup.strip():
        failed = _setup(spawn, r, setup, writer, err, deadline, stop, carried=how != "created",
                        included=included)
        if failed is not None:
            return spawn, failed
    cwd = r.cwd if os.path.isdir(r.cwd) else r.path  # a folder the base commit does not have
    raw = {**spawn.raw, "cwd": cwd, "workspace": r.path}
    return plain.replace(spawn, cwd=cwd, workspace=r.path, raw=raw), None


def leave(spawn: SpawnRecord) -> None:
    """After the work: the objects its sandbox wrote are brought into the
    repository, verified (`zapcli.worktrees.objects`), and a branch its
    sandbox fenced (`zapcli.worktrees.fence`) is a plain ref again, as git
    keeps one — what the agent left in its own folders stays in reach of no
    one else for no longer than the run. Objects that cannot come in now stay
    in its own folder: merge and pick try again and say why."""
    if not spawn.worktree:  # no tree: nothing of git to import
        return
    from zapcli.worktrees import git as g
    from zapcli.worktrees.fence import disarm
    from zapcli.worktrees.objects import bring_in

    r = g.Receipt.from_dict(spawn.worktree)
    if r is None or r.repo_gone:
        return
    try:
        bring_in(r)
    except (g.GitError, OSError):
        pass  # its own folder stays, read as an alternate; merge and pick say why
    try:
        disarm(r)
    except (g.GitError, OSError):
        pass  # a locked ref: the link stays, and git reads through it


def _include(r: Any) -> tuple[list[tuple[str, str]], str | None]:
    """Copy what `.worktreeinclude` names; ((each file copied in the checkout,
    its path in the tree), a problem or None)."""
    from zapcli.worktrees import git as g
    from zapcli.worktrees.include import FILE, copy

    try:
        where = r.checkout()
        return [(os.path.join(where.work_tree, p), p) for p in copy(where, r.path)], None
    except g.GitError as exc:
        return [], f"{FILE}: git could not list the files to copy: {exc.message}"
    except OSError as exc:
        return [], f"{FILE}: a file could not be copied into the tree: {exc}"


def _worked(r: Any, included: list[tuple[str, str]]) -> str | None:
    """Why the new tree may hold agent work's files, or None: the person's
    own. It is made from a subagent's tree (spawned from inside one: its
    HEAD is that work's commit); its repository lies below a folder agent work was given to write in
    (`zapcli.agentroots.repo_worked`: its commits may be that work's), or a
    file `.worktreeinclude` copied in lies in one (`written`: the
    checkout's top itself, given to a subagent spawned there without
    `--worktree`, or a writable root within it — the ignored files it names
    are no control file). Asked as the tree is made, not at spawn: notes
    only grow, and work started while this one was queued is among them."""
    from zapcli import agentroots
    from zapcli.worktrees import root as trees

    top, held = os.path.realpath(r.repo), os.path.realpath(trees())
    if top == held or top.startswith(held.rstrip("/") + "/"):
        return (f"the new tree is made from {r.repo}, a subagent's tree: its commits are "
                "that work's")
    found = agentroots.repo_worked(r.repo, r.common_dir)
    if found is not None:
        return (f"the repository {r.repo} lies below {found}, a folder agent work was given "
                "to write in, so its commits may be that work's")
    copied = agentroots.written(source for source, _ in included) if included else None
    if copied is not None:
        return (f"{copied[0]}, which .worktreeinclude copied into the tree, lies in {copied[1]}, "
                "a folder agent work was given to write in, so it may be that work's")
    return None


def _setup(spawn: SpawnRecord, r: Any, command: str, writer: TrailWriter, err: Any,
           deadline: float, stop: threading.Event | None, carried: bool,
           included: list[tuple[str, str]]) -> Outcome | None:
    """Run `worktree.setup` in the new tree; a `failed` outcome when it fails.
    `carried`: the tree was made again from a continued subagent's branch,
    whose files agent work wrote (`zapcli.backends.sandboxed.tree_box`; an
    unsandboxed one's as the person, unless `_worked` says other work's
    files may be in it too). `included`: the files `.worktreeinclude` copied in."""
    from zapcli.trail import store
    from zapcli.worktrees import hooks

    box: Any = (None, None, [], None)
    made = _worked(r, included)
    if carried:  # its branch holds agent work: in the sandbox that work had
        from zapcli.backends.sandboxed import tree_box

        box = tree_box([spawn], r.path, store.path_for(writer.path.stem, store.TMP))
        if isinstance(box, str):
            return Outcome(Status.FAILED, None, f"worktree.setup was not run: {box}; its "
                           "tree holds agent work, which runs only in the sandbox that work had")
    if made is not None and box[0] is None:  # its commits or copied files may be agent work's
        from zapcli.backends.sandboxed import made_box

        box = made_box(spawn, r.path, store.path_for(writer.path.stem, store.TMP))
        if isinstance(box, str):
            return Outcome(Status.FAILED, None, f"worktree.setup was not run: {box}; {made}, "
                           "which runs only sandboxed (nothing of the task ran; spawn without "
                           "--worktree, or where the sandbox can be had)")
    starts, held, _notes, own = box
    env = {**(os.environ if own is None else own), "ZAPCLI_ID": writer.path.stem,
           "ZAPCLI_WORKTREE": r.path, "ZAPCLI_REPO": r.repo}
    left = (deadline - time.monotonic()) if deadline else spawn.timeout_s
    try:
        done = hooks.run(command, r.path, env, max(left, 0.0),
                         stop=(stop.is_set if stop is not None else lambda: False), box=starts)
    finally:
        if held is not None:
            held.release()
    if err is not None and done.output:
        err.write(f"[worktree setup: {command}]\n{done.output}".encode("utf-8", "replace"))
    writer.write_sync("worktree_setup", done.to_dict())
    if done.ok:
        return None
    if done.why == "stopped":
        return Outcome(Status.CANCELLED, None, "cancelled during the worktree setup")
    if done.why == "timeout":
        return Outcome(Status.TIMEOUT, None, "deadline reached during the worktree setup")
    where = (spawn.worktree or {}).get("hooks_from")
    named = f"worktree.setup from {where}" if isinstance(where, str) and where else \
        "worktree.setup of your config.yaml"
    return Outcome(Status.FAILED, done.exit_code, f"{named} {done.failure()}")
