"""`zapcli pick ID [--squash | --rebase] [--force]`: keep one attempt (#23) —
merge its work (`zapcli.ops.merge`), then remove its siblings' trees. Only
an attempt that completed, unless forced: one that failed, timed out or was
stopped may hold half its work, or none (its tree's setup failed).

Imports `zapcli.ops.merge`, `zapcli.ops.attempts`, `zapcli.ops.kill`,
`zapcli.lifecycle`, `zapcli.worktrees`, `zapcli.backends.sandboxed` (the
sandbox a sibling's `worktree.teardown` runs in). Nothing happens unless the merge
does, or finds its work already on the branch (`up_to_date`: a pick run
again, or an attempt merged by hand, still retires its siblings). A
sibling still running is stopped first. Nothing of a sibling is lost: its
uncommitted work becomes a commit on its branch before its tree goes, and
a branch holding commits is kept (a branch with nothing beyond its base
goes with its tree, and so does one whose work is the picked work's —
the same tree id, so every file of it is there); its trail stays.
"""

from __future__ import annotations

from zapcli.config import Settings
from zapcli.errors import NotFound, UsageError, ZapcliError, param
from zapcli.lifecycle import treework
from zapcli.lifecycle import worktrees as lw
from zapcli.ops.attempts import siblings_of
from zapcli.ops.merge import Allow, MergeResult, merge
from zapcli.ops.merge import ready as merge_ready
from zapcli.plain import field, plain
from zapcli.trail import store
from zapcli.worktrees import git as g


@plain
class PickResult:
    merge: MergeResult
    siblings: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)  # still running: stopped first
    removed: dict[str, str] = field(default_factory=dict)  # id -> what became of its branch
    kept: dict[str, str] = field(default_factory=dict)  # id -> why its tree was not removed


def pick(sid: str, settings: Settings, *, squash: bool = False, rebase: bool = False,
         allow_control: Allow = False, force: bool = False) -> PickResult:
    """Merge attempt `sid`, then remove the other attempts' trees. Raises
    ZapcliError (nothing changed) when it ended other than completed (unless
    `force`), when the merge cannot be made, or would change control files
    `allow_control` does not allow (`zapcli.ops.merge`)."""
    sid, siblings = _pickable(sid, force)
    res = PickResult(merge(sid, squash=squash, rebase=rebase, allow_control=allow_control),
                     siblings)
    others = [s for s in siblings if s != sid]
    res.stopped = _stop_running(others, settings)
    same_as = _picked_work(sid, res.merge)
    for other in others:
        _retire(other, res, same_as)
    return res


def _picked_work(sid: str, merged: MergeResult) -> dict[str, str]:
    """{tree id: whose}: the picked work as its branch holds it and as the
    checkout now has it. A sibling whose branch ends in one of them holds
    nothing that is not kept: its branch goes with its tree."""
    try:
        co = lw.tree_of(sid).receipt.checkout()
        proc = g.git(["rev-parse", f"refs/heads/{merged.branch}^{{tree}}", f"{merged.commit}^{{tree}}"],
                     co, check=False)
    except (NotFound, ZapcliError, g.GitError):
        return {}  # no tree of its own to compare with: siblings with commits are kept
    trees = proc.stdout.split() if proc.returncode == 0 else []
    return {t: f"the picked {sid}" for t in trees}


def _pickable(sid: str, force: bool) -> tuple[str, list[str]]:
    """(full id, its attempts); raises when it is not an attempt, or (without
    `force`) one that ended other than completed."""
    sid = store.resolve(sid)
    siblings = siblings_of(sid)
    if sid not in siblings:
        raise UsageError(f"{sid} is not one of its own attempts")  # a damaged record
    if not force:
        _completed(sid)
    return sid, siblings


def ready(sid: str, *, squash: bool = False, rebase: bool = False, force: bool = False) -> str:
    """The full id when a pick of `sid` is worth asking a person about;
    raises what `pick` would refuse before looking at the work (`merge.ready`)."""
    sid, _siblings = _pickable(sid, force)
    return merge_ready(sid, squash=squash, rebase=rebase)


def _completed(sid: str) -> None:
    """Refuse an attempt that ended without completing (failed, timeout,
    cancelled, lost, interrupted — its work may be half done, or its task
    never ran): picking it is a choice to make on purpose. One still running
    is left to `merge`, which refuses it. Raises ZapcliError."""
    from zapcli.lifecycle.observe import observe
    from zapcli.trail.model import Status

    view = observe(sid)
    if not view.terminal or view.status == Status.COMPLETED:
        return
    why = f" ({view.reason})" if view.reason else ""
    raise ZapcliError(f"{sid} not picked: it ended {view.status}{why}. pick keeps an attempt that "
                      f"completed; compare them with zapcli attempts {sid}, or give "
                      f"{param('force')} to merge its work all the same",
                      code="not_completed")


def _stop_running(others: list[str], settings: Settings) -> list[str]:
    from zapcli.lifecycle.observe import observe
    from zapcli.ops.kill import kill

    running = []
    for other in others:
        try:
            if not observe(other).terminal:
                running.append(other)
        except NotFound:
            continue
    if not running:
        return []
    return [e.id for e in kill(running, settings) if e.stopped]


def _retire(other: str, res: PickResult, same_as: dict[str, str]) -> None:
    """Commit what the tree of `other` holds to its branch, then remove the tree."""
    from zapcli.backends.sandboxed import tree_box
    from zapcli.lifecycle.treeremove import remove_tree
    from zapcli.worktrees.inspect import state
    from zapcli.worktrees.snapshot import keep

    try:
        tree = lw.tree_of(other)
    except (NotFound, ZapcliError) as exc:
        res.kept[other] = f"no tree to remove ({exc.message})"
        return
    if tree.users:
        res.kept[other] = "in use by " + ", ".join(f"{i} ({s})" for i, s, _o in tree.users)
        return
    try:
        work = treework.of(other, need=False, refresh=True)  # stopped, and nobody's now
        if work.snap is not None and work.snap.uncommitted and work.snap.on_branch:
            keep(tree.receipt.tree(), tree.receipt.branch, work.snap)
        st = state(tree.receipt)
        if st.modified or st.untracked or st.error:
            res.kept[other] = "holds work that could not be committed: " + ", ".join(st.reasons())
            return
        removal = remove_tree(tree, st, by="pick", same_as=same_as, boxes=tree_box)
    except g.GitError as exc:
        res.kept[other] = f"git: {exc.message}"
        return
    branch = tree.receipt.branch
    res.removed[other] = (f"branch {branch} deleted ({removal.done.note})" if removal.done.branch
                          else f"branch {branch} kept: its work is there "
                               f"(git branch -D {branch} drops it)")
    if removal.teardown_note:
        res.removed[other] += f"; {removal.teardown_note}"
