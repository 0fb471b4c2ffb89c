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

import threading

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

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

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
    warning: str | None = None  # merged, but something after it did not go as planned


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
    except g.GitError as exc:
        raise ZapcliError(f"{sid} not merged: git cannot read the checkout {r.repo}: "
                          f"{exc.message}") from None
    if co.branch is None:
        raise ZapcliError(f"{sid} not merged: the checkout {r.repo} is on a detached HEAD; check "
                          "out the branch to merge into first", code="detached")
    if co.busy:
        raise ZapcliError(f"{sid} not merged: the checkout {r.repo} is in the middle of {co.busy}; "
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
    sid, s, r = treework.receipt(sid)
    early = _Early(sid) if s.final is not None and not s.continued_by else None
    view = observe(sid)
    if not view.terminal:
        raise ZapcliError(f"{sid} is {view.status}; only a finished subagent's work is merged "
                          f"(zapcli wait {sid}, or zapcli kill {sid})", code="not_finished")
    if r.repo_gone:
        raise ZapcliError(f"{sid} not merged: its repository {r.repo} no longer exists",
                          code="repo_gone")
    from zapcli.lifecycle.worktrees import live_users

    users = live_users(r.path)
    if users:  # a continuation (or another subagent) works in its tree now
        raise ZapcliError(f"{sid} not merged: its tree is in use by "
                          f"{', '.join(f'{i} ({st})' for i, st, _o in users)}; wait for it first",
                          code="in_use")
    with _locked(r):
        return _merge_locked(sid, how, early.result() if early is not None else None)


class _Early(threading.Thread):
    """The work of a finished subagent (a full scan of its tree: as long as
    git's own merge takes in a big repository), read while the rest is
    checked, not after."""

    def __init__(self, sid: str):
        super().__init__(name="merge-work", daemon=True)
        self.sid = sid
        self.work: treework.Work | None = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.work = treework.of(self.sid, refresh=True)  # finished: its tree is ours to refresh
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            self.error = exc

    def result(self) -> treework.Work:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.work is not None
        return self.work


def _merge_locked(sid: str, how: str, work: treework.Work | None) -> MergeResult:
    work = work or treework.of(sid, refresh=True)
    r = work.receipt
    co = _ready(sid, work)
    source = work.commit
    assert source is not None
    if how == "rebase" and not work.tree_exists:
        raise ZapcliError(f"{sid} not merged: --rebase replays its branch in its tree, and its "
                          f"tree {r.path} is gone; merge or squash instead", code="no_tree")
    moved = co.head != r.base
    note = stale.note(r, None, co)
    warning = None
    try:
        merged = gm.merge_tree(r.repo, co.head, source) if moved else None
        if merged is not None:
            note.update(merges_cleanly=merged[0] is not None, conflicts=merged[1])
        plan = gm.plan(co, source, how, _message(work, how, co, source), moved=moved, merged=merged)
        if how == "rebase":
            gm.in_the_way(co, str(merged[0]) if merged else source)
            _keep(work)
            plan.commit = gm.rebase_in_tree(r.path, co.head)
        gm.fast_forward(r.repo, plan.commit)  # git refuses, changing nothing, if a change is in the way
    except gm.Refused as exc:
        raise _refused(sid, exc) from None
    except g.GitError as exc:
        raise ZapcliError(f"{sid} not merged: {exc.message}") from None
    # merged: what follows only completes the record
    if how != "rebase":
        warning = _keep(work, after=True)  # the branch holds all that was merged
    try:
        files = gm.touched(r.repo, co.head, plan.commit)
    except g.GitError:
        files = []
    committed = bool(work.snap and work.snap.uncommitted and warning is None)
    tip = plan.commit if how == "rebase" else source if committed or not work.snap else work.snap.head
    res = MergeResult(sid, plan.how, r.repo, str(co.branch), plan.commit, co.head, r.branch,
                      files, committed, note, warning)
    store.append(store.path_for(sid), "merged", {
        "how": plan.how, "repo": r.repo, "into": co.branch, "commit": plan.commit,
        "previous": co.head, "tip": tip, "files": len(files), "committed_work": committed},
        sync=False)  # a hint for worktree rm: lost in a crash, a squashed branch is only kept
    return res


def _keep(work: treework.Work, *, after: bool = False) -> str | None:
    """Commit the tree's uncommitted work on its branch (the snapshot). After
    the checkout has moved, a failure is a warning (the work is merged, and
    still in the tree), not a refusal."""
    if work.snap is None or not work.snap.uncommitted:
        return None
    try:
        keep(work.receipt.path, work.receipt.branch, work.snap)
    except g.GitError as exc:
        if not after:
            raise
        return (f"its uncommitted work is merged, but could not be committed on its branch "
                f"({exc.message}); it is still in its tree")
    return None
