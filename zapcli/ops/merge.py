"""`zapcli merge ID [--squash | --rebase]`: a finished subagent's work into
the current branch of the checkout it was spawned from (SPEC §16, #23).

Imports `zapcli.lifecycle.treework`, `zapcli.lifecycle.observe`,
`zapcli.worktrees`, `zapcli.trail`. Under the repository's worktree lock:
the work (its tree's snapshot: uncommitted work included) is merged in the
object store first; a conflict, uncommitted changes of the checkout in the
paths it would change, a detached HEAD or a merge in progress refuse it with
the files named and nothing changed on either side. Only then does the
uncommitted work become a commit on the subagent's branch (so the branch
holds everything that was merged) and the checkout move forward to the
result. A `merged` record in the trail says what was merged, so `worktree
rm` and `gc` know a squashed branch was taken.
"""

from __future__ import annotations

from typing import Any

from zapcli.errors import UsageError, ZapcliError, param
from zapcli.lifecycle import treework
from zapcli.lifecycle.observe import observe
from zapcli.plain import field, plain
from zapcli.trail import store
from zapcli.worktrees import git as g
from zapcli.worktrees import merge as gm
from zapcli.worktrees import stale
from zapcli.worktrees.create import _locked
from zapcli.worktrees.snapshot import keep

SQUASH_LOG_MAX = 50  # commits listed in a squash commit's message


@plain
class MergeResult:
    id: str
    how: str  # fast-forward | merge | squash | rebase
    repo: str
    into: str  # the checkout's branch
    commit: str  # its new HEAD
    previous: str  # its HEAD before
    branch: str  # the subagent's branch (it holds the work, uncommitted work committed)
    files: list[str] = field(default_factory=list)
    committed_work: bool = False  # the tree's uncommitted work became a commit on its branch
    stale: dict[str, Any] = field(default_factory=dict)  # the branch had moved since the base


def _refused(sid: str, exc: gm.Refused) -> ZapcliError:
    return ZapcliError(f"{sid} not merged: {exc.message}; the checkout is unchanged",
                       code=exc.code)


def _message(work: treework.Work, how: str, co: gm.Checkout, source: str) -> str:
    subject = treework.subject(work.summary)
    r = work.receipt
    if how != "squash":
        return f"Merge branch '{r.branch}'\n\n{subject} (subagent {work.sid})"
    log = g.git(["log", "--format=%h %s", f"-{SQUASH_LOG_MAX}", f"{r.base}..{source}"], co.repo,
                check=False).stdout.strip()
    return f"{subject}\n\nSquashed from branch {r.branch} (subagent {work.sid}):\n{log}"


def _ready(sid: str, work: treework.Work) -> gm.Checkout:
    """The checkout to merge into, or a refusal saying why not now."""
    r = work.receipt
    try:
        co = gm.checkout(r.repo)
        doing = gm.busy(r.repo)
    except g.GitError as exc:
        raise ZapcliError(f"{sid} not merged: git cannot read the checkout {r.repo}: "
                          f"{exc.message}") from None
    if co.branch is None:
        raise ZapcliError(f"{sid} not merged: the checkout {r.repo} is on a detached HEAD; check "
                          "out the branch to merge into first", code="detached")
    if doing:
        raise ZapcliError(f"{sid} not merged: the checkout {r.repo} is in the middle of {doing}; "
                          "finish or abort it first", code="busy")
    if work.snap is not None and not work.snap.on_branch:
        raise ZapcliError(f"{sid} not merged: its tree {r.path} is not on its branch {r.branch} "
                          f"(something checked out another); check out {r.branch} there, or "
                          "merge by hand", code="off_branch")
    return co


def merge(sid: str, *, squash: bool = False, rebase: bool = False) -> MergeResult:
    """Merge the work of finished subagent `sid`. Raises ZapcliError (nothing
    changed) when it cannot."""
    if squash and rebase:
        raise UsageError(f"{param('squash')} and {param('rebase')} are two ways; choose one")
    how = "squash" if squash else "rebase" if rebase else "merge"
    sid, _s, r = treework.receipt(sid)
    view = observe(sid)
    if not view.terminal:
        raise ZapcliError(f"{sid} is {view.status}; only a finished subagent's work is merged "
                          f"(zapcli wait {sid}, or zapcli kill {sid})", code="not_finished")
    if r.repo_gone:
        raise ZapcliError(f"{sid} not merged: its repository {r.repo} no longer exists",
                          code="repo_gone")
    with _locked(r):
        return _merge_locked(sid, how)


def _merge_locked(sid: str, how: str) -> MergeResult:
    work = treework.of(sid)
    r = work.receipt
    co = _ready(sid, work)
    assert work.commit is not None
    if how == "rebase" and not work.tree_exists:
        raise ZapcliError(f"{sid} not merged: --rebase replays its branch in its tree, and its "
                          f"tree {r.path} is gone; merge or squash instead", code="no_tree")
    note = stale.note(r, work.commit, co)
    try:
        plan = gm.plan(co, work.commit, how, _message(work, how, co, work.commit))
        if work.snap is not None:
            keep(r.path, r.branch, work.snap)  # the branch holds everything that is merged
        if how == "rebase":
            plan.commit = gm.rebase_in_tree(r.path, co.head)
        gm.fast_forward(r.repo, plan.commit)
    except gm.Refused as exc:
        raise _refused(sid, exc) from None
    except g.GitError as exc:
        raise ZapcliError(f"{sid} not merged: {exc.message}") from None
    tip = g.git(["rev-parse", f"refs/heads/{r.branch}"], r.repo, check=False).stdout.strip()
    res = MergeResult(sid, plan.how, r.repo, str(co.branch), plan.commit, co.head, r.branch,
                      plan.files, bool(work.snap and work.snap.uncommitted), note)
    store.append(store.path_for(sid), "merged", {
        "how": plan.how, "repo": r.repo, "into": co.branch, "commit": plan.commit,
        "previous": co.head, "tip": tip, "files": len(plan.files),
        "committed_work": res.committed_work})
    return res
