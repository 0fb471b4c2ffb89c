"""Making a subagent's tree: `git worktree add --no-track -b zapcli/<id>`,
serialized per repository.

Imports `zapcli.worktrees.git` (its places: git runs on the checkout and
the tree zapcli recorded, never found from a tree's files), `zapcli.locks`,
`zapcli.paths`. Parallel
`git worktree add` in one repository race on git's own lock files (and,
with tracking, on `config.lock`): every creation holds an exclusive lock in
the repository's common git dir, so eight spawns at the same instant are
made one after the other. `--no-track` keeps `.git/config` out of it. A
creation that fails is undone — its tree unregistered, its new branch
deleted — so a retry or a later spawn never meets an orphan; a lock error
from a git command outside zapcli is retried with backoff.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from pathlib import Path

from zapcli import plain
from zapcli.locks import LockTimeout, exclusive
from zapcli.paths import ensure_dir
from zapcli.worktrees import git as g

LOCK_NAME = "zapcli-worktree.lock"
LOCK_TIMEOUT_S = 300.0
RETRIES = (0.2, 0.5, 1.0)  # seconds before each retry of a lock race with a non-zapcli git
_TRANSIENT = ("index.lock", ".lock': File exists", "could not lock", "Unable to create",
              "cannot lock ref")


def _locked(r: g.Receipt) -> AbstractContextManager[None]:
    return exclusive(Path(r.common_dir) / LOCK_NAME, LOCK_TIMEOUT_S)


def create(r: g.Receipt) -> float:
    """Make the tree of `r` on its new branch from `r.base`; returns the
    seconds spent waiting for the repository's lock. Raises GitError with
    git's message; then neither the tree nor the branch is left."""
    ensure_dir(Path(r.path).parent)
    co = r.checkout()
    asked = time.monotonic()
    try:
        with _locked(r):
            waited = time.monotonic() - asked
            for attempt, pause in enumerate((*RETRIES, None)):
                proc = g.git(["worktree", "add", "--no-track", "-q", "-b", r.branch, r.path,
                              r.base], co, check=False)
                if proc.returncode == 0:
                    r.tree()  # what git made agrees with the receipt
                    return waited
                message = g._message(proc)
                _undo(r, drop_branch=True)
                if pause is None or not any(t in message for t in _TRANSIENT):
                    raise g.GitError(message, proc.returncode)
                time.sleep(pause * (attempt + 1))
    except LockTimeout:
        raise g.GitError(f"the worktree lock {Path(r.common_dir) / LOCK_NAME} stayed busy for "
                         f"{LOCK_TIMEOUT_S:.0f}s") from None
    raise AssertionError("unreachable")  # the loop returns or raises


def attach(r: g.Receipt, tip: str | None = None) -> str:
    """The tree of `r` for a continued subagent: the existing one ("reused"),
    else its branch checked out again ("reattached"), else its branch made
    again at `tip` — the commit it had when zapcli removed it, or its base
    when no tree was ever made ("recreated"). Raises GitError, naming the
    missing tree and branch, when neither exists and there is no `tip`: the
    work never runs elsewhere (C28). A branch that existed before is never
    deleted here."""
    co = r.checkout()
    if Path(r.path).is_dir() and str(Path(r.path).resolve()) in g.registered(co):
        r.tree()  # its admin files still agree with the receipt: never a planted git dir
        return "reused"
    if not g.branch_exists(co, r.branch):
        if not tip:
            raise g.GitError(f"its tree {r.path} and its branch {r.branch} are both gone, and no "
                             "commit of them is known to make them again from")
        create(plain.replace(r, base=tip))
        return "recreated"
    ensure_dir(Path(r.path).parent)
    with _locked(r):
        g.git(["worktree", "prune"], co, check=False)  # a tree deleted by hand
        proc = g.git(["worktree", "add", "-q", r.path, r.branch], co, check=False)
        if proc.returncode != 0:
            _undo(r, drop_branch=False)
            raise g.GitError(g._message(proc), proc.returncode)
        r.tree()
    return "reattached"


def _undo(r: g.Receipt, *, drop_branch: bool) -> None:
    """Remove what a failed `worktree add` may have left: the registered tree
    and (for a branch this call created) the branch. Best effort; no rm -rf."""
    co = r.checkout()
    if str(Path(r.path).resolve()) in g.registered(co):
        g.git(["worktree", "remove", "--force", r.path], co, check=False)
    g.git(["worktree", "prune"], co, check=False)
    if drop_branch and g.branch_exists(co, r.branch):
        g.git(["branch", "-D", r.branch], co, check=False)
