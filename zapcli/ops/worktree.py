"""`zapcli worktree list` and `zapcli worktree rm ID... [--force]` (docs/explanation/rules.md#parallel-coding).

Imports `zapcli.lifecycle.worktrees`, `zapcli.lifecycle.treeremove` (teardown,
removal, the trail's record), `zapcli.worktrees`, `zapcli.backends.sandboxed`
(the sandbox the teardown runs in). `rm` refuses a tree
that holds work (changes, untracked files, commits on no other branch) or
that a live subagent works in, unless `--force`; it never removes the tree
of a subagent that has not finished, even with `--force`. Given several
ids, each answers on its own, as `rm`'s do (`remove_each`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zapcli.errors import ZapcliError, param
from zapcli.lifecycle import worktrees as lw
from zapcli.lifecycle.treeremove import remove_tree
from zapcli.worktrees import git as g


def list_trees() -> list[lw.Tree]:
    """Every subagent tree on disk, with its state and users; a clean one whose
    branch went past its base and is in the checkout's branch (a fast-forward
    or a merge commit) is `merged`, as a squash-merged one is."""
    trees = lw.find()
    for t in trees:
        st = t.state
        if st is not None and st.label == "clean" and st.beyond_base and st.tip:
            try:  # the checkout named by the receipt, through the one runner
                took = g.git(["merge-base", "--is-ancestor", st.tip, "HEAD"], t.receipt.checkout(),
                             check=False)
            except g.GitError:  # its checkout moved or went: nothing to say about merged
                continue
            t.merged = took.returncode == 0
    return trees


@dataclass
class RmResult:
    tree: lw.Tree
    branch_deleted: bool
    note: str = ""  # why its branch went, or was kept
    teardown: str = ""  # what went wrong in `worktree.teardown`


def remove(sid: str, *, force: bool = False) -> RmResult:
    """Remove the tree of `sid`. Raises ZapcliError saying why not."""
    from zapcli.backends.sandboxed import tree_box
    from zapcli.trail.store import resolve

    sid = resolve(sid)
    tree = lw.tree_of(sid)
    st = tree.state
    assert st is not None
    if tree.running:
        whose = (f"{sid} has not finished" if tree.running[0] == sid else
                 f"{tree.running[0]}, which works in it, has not finished")
        raise ZapcliError(f"the worktree of {sid} is in use: {whose}; it is never removed "
                          "while its subagent runs (kill it first)", code="in_use")
    if tree.users and not force:
        users = ", ".join(f"{i} ({s})" for i, s, _o in tree.users)
        raise ZapcliError(f"the worktree {tree.receipt.path} is in use by {users}; wait for "
                          f"them, or remove it anyway with {param('force')}", code="in_use")
    if tree.receipt.repo_gone and not force:
        raise ZapcliError(f"the repository of the worktree {tree.receipt.path} "
                          f"({tree.receipt.repo}) no longer exists, so git cannot remove it; "
                          f"{param('force')} deletes the folder (with whatever is in it)",
                          code="repo_gone")
    if st.holds_work and not force:
        raise ZapcliError(f"the worktree {tree.receipt.path} holds work: "
                          f"{', '.join(st.reasons())}; commit or push it, or remove it anyway "
                          f"with {param('force')}", code="holds_work")
    try:
        removal = remove_tree(tree, st, force=force, by="worktree rm", boxes=tree_box)
    except g.GitError as exc:
        raise ZapcliError(f"git worktree remove failed: {exc.message}") from None
    return RmResult(tree, removal.done.branch, removal.done.note, removal.teardown_note)


@dataclass
class RmEach:
    """`worktree rm` of several ids: the trees removed, and each id refused
    with why (id -> the error's code and message)."""

    removed: list[RmResult] = field(default_factory=list)
    refused: dict[str, tuple[str, str]] = field(default_factory=dict)


def remove_each(ids: list[str], *, force: bool = False) -> RmEach:
    """Remove the tree of each id, each on its own: one refused (holds work,
    in use, no tree, no such id) keeps none of the others from going. An id
    whose tree went with an earlier one's (a `continue` carries a tree over)
    is answered by it."""
    from zapcli.trail.store import resolve

    res = RmEach()
    for sid in dict.fromkeys(resolve(i) for i in ids):
        if any(sid in done.tree.ids for done in res.removed):
            continue
        try:
            res.removed.append(remove(sid, force=force))
        except ZapcliError as exc:
            res.refused[sid] = (exc.code, exc.message)
    return res
