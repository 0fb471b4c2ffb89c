"""Subagents' trees seen from the lifecycle: who uses each one, what it
holds, and what `worktree rm` and `gc` may do with it (docs/explanation/rules.md#parallel-coding).

Imports `zapcli.worktrees`, `zapcli.lifecycle.observe`, `zapcli.lifecycle.session`.
A tree is in use while any subagent that is not terminal (queued included)
has it as its tree or works inside it (`--cwd`). zapcli never removes a tree
in use or one that holds work (changes, untracked files, commits on no other
branch); `gc` removes clean trees whose subagents all finished, and says
why it kept every other one.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli import ids as idmod
from zapcli import worktrees
from zapcli.errors import NotFound
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import observe
from zapcli.paths import state_dir
from zapcli.plain import field, plain
from zapcli.trail.model import SpawnRecord, Status
from zapcli.trail.reader import load
from zapcli.worktrees import git as g
from zapcli.worktrees.inspect import TreeState, state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.lifecycle.treeremove import Boxes


def receipt_of(spawn: SpawnRecord) -> g.Receipt | None:
    """The tree receipt a `spawn` record carries, if any."""
    return g.Receipt.from_dict(spawn.worktree)


def _inside(child: str, parent: str) -> bool:
    try:
        c, p = Path(child).resolve(), Path(parent).resolve()
    except OSError:
        return False
    return c == p or p in c.parents


Live = list[tuple[str, str, str, "g.Receipt | None"]]  # (id, status, cwd, receipt)


def live() -> Live:
    """Every subagent not terminal, found through the active markers of every
    session (a hint, each one observed)."""
    out: Live = []
    for _key, sid in sessions.all_active():
        try:
            s = load(sid)
            view = observe(sid, summary=s)
        except NotFound:
            continue
        if not view.terminal:
            out.append((sid, str(view.status), s.spawn.cwd, receipt_of(s.spawn)))
    return out


def live_users(path: str, alive: Live | None = None) -> list[tuple[str, str, bool]]:
    """(id, status, owner) of every live subagent that uses the tree at `path`:
    `owner` when it is that subagent's own tree, else it works inside it."""
    out = []
    for sid, status, cwd, r in live() if alive is None else alive:
        owner = r is not None and _inside(r.path, path) and _inside(path, r.path)
        if owner or _inside(cwd, path):
            out.append((sid, status, owner))
    return out


@plain
class Tree:
    """One subagent tree. `ids`: the subagents that had it, oldest first (a
    `continue` carries a tree over); `statuses` theirs."""

    receipt: g.Receipt
    ids: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    state: TreeState | None = None
    users: list[tuple[str, str, bool]] = field(default_factory=list)
    merged: bool = False  # `worktree list`: its branch's commits are on the checkout's branch

    @property
    def id(self) -> str:
        return self.ids[0] if self.ids else Path(self.receipt.path).name

    @property
    def running(self) -> list[str]:
        return [sid for sid, _st, owner in self.users if owner]

    @property
    def in_use_by(self) -> list[str]:
        return [sid for sid, _st, _owner in self.users]


def _chain(sid: str) -> tuple[list[str], list[str], g.Receipt | None, dict | None]:
    """The ids (and statuses) of `sid` and the subagents that continued it,
    and the last `merged` record among them."""
    chain: list[str] = []
    statuses: list[str] = []
    receipt: g.Receipt | None = None
    merged = None
    seen: set[str] = set()
    current: str | None = sid
    while current and current not in seen and len(chain) < 100:
        seen.add(current)
        try:
            s = load(current)
        except NotFound:
            break
        chain.append(current)
        statuses.append(str(s.final.status if s.final else Status.RUNNING))
        receipt = receipt or receipt_of(s.spawn)
        merged = s.merged or merged
        current = s.continued_by
    return chain, statuses, receipt, merged


def squashed(st: TreeState, merged: dict | None) -> bool:
    """`zapcli merge --squash` took the branch at the commit it still has."""
    return bool(merged and merged.get("how") == "squash" and st.tip and merged.get("tip") == st.tip
                and (not st.exists or st.head == st.tip))


def _orphan_receipt(path: Path) -> g.Receipt:
    """A tree whose trail is gone: its repository as its link files name it
    (its base is lost), read without running git there. The common dir is
    the folder holding the admin folder, which must hold its `worktrees/`
    and lie outside every tree and zapcli's own folders; `state` then checks
    the links agree. Nothing found: a receipt whose repository is gone."""
    from zapcli.worktrees.place import _points, _read

    admin = _points(str(path), _read(str(path / ".git")), "gitdir:") or ""
    common = os.path.dirname(os.path.dirname(admin)) if admin else ""
    if (os.path.basename(os.path.dirname(admin)) != "worktrees"
            or any(_inside(common, p) for p in (str(worktrees.root()), str(state_dir())))):
        common = ""
    repo = (str(Path(common).parent) if common.endswith("/.git") else common) or \
        "(unknown: its .git file names no repository)"
    return g.Receipt(repo=repo, common_dir=common or str(path / ".git-unknown"), path=str(path),
                     branch=worktrees.branch_for(path.name), base="")


def find(sid: str | None = None, *, inspect: bool = True) -> list[Tree]:
    """Every tree zapcli made that still exists on disk (or the one of `sid`)."""
    try:
        names = sorted(os.listdir(worktrees.root()))
    except OSError:
        names = []
    if sid is not None:
        names = [n for n in names if n == sid]
    trees = []
    alive = live() if names else []
    for name in names:
        path = worktrees.root() / name
        if not idmod.is_valid(name) or not path.is_dir():
            continue
        chain, statuses, receipt, merged = _chain(name)
        tree = Tree(receipt or _orphan_receipt(path), chain, statuses)
        tree.users = live_users(str(path), alive)
        if inspect:
            tree.state = state(tree.receipt)
            tree.state.squashed = squashed(tree.state, merged)
        trees.append(tree)
    return trees


def tree_of(sid: str) -> Tree:
    """The tree of subagent `sid` (or of the subagent it continued); a tree whose
    subagent was removed (`zapcli rm`) by its folder's name. Raises NotFound."""
    try:
        s = load(sid)
    except NotFound:
        orphan = find(sid) if idmod.is_valid(sid) else []
        if orphan:
            return orphan[0]
        raise
    r = receipt_of(s.spawn)
    if r is None:
        raise NotFound(f"{sid} has no worktree (it was not spawned with --worktree)")
    found = find(Path(r.path).name)
    if not found:
        raise NotFound(f"the worktree of {sid} ({r.path}) does not exist (removed, or not "
                       "created yet)")
    return found[0]


@plain
class Decision:
    """What `gc` does with one tree, and why."""

    tree: Tree
    action: str  # remove | keep | failed
    reason: str
    branch_deleted: bool = False
    branch_note: str = ""  # why the branch went (merged, nothing beyond its base)


def decide(tree: Tree) -> Decision:
    """Remove only a clean tree of finished subagents that nobody uses."""
    st = tree.state or state(tree.receipt)
    if tree.running:
        return Decision(tree, "keep", f"its subagent {tree.running[0]} is not finished")
    if tree.users:
        sid, status, _owner = tree.users[0]
        return Decision(tree, "keep", f"in use by {sid} ({status}), which works inside it")
    if st.holds_work:
        return Decision(tree, "keep", "holds work: " + ", ".join(st.reasons()))
    done = ", ".join(f"{i} {s}" for i, s in zip(tree.ids, tree.statuses, strict=True))
    return Decision(tree, "remove", f"clean, and its subagent finished ({done or 'trail gone'})")


def collect(*, boxes: Boxes, dry_run: bool = False) -> list[Decision]:
    """`gc` for trees: remove every tree `decide` allows, never with --force;
    a failing `git worktree remove` is reported as such and nothing else is
    tried (no rm -rf). `boxes`: how a tree's teardown is sandboxed
    (`zapcli.lifecycle.treeremove.remove_tree`'s)."""
    from zapcli.lifecycle.treeremove import remove_tree

    decisions = [decide(t) for t in find()]
    if dry_run:
        return decisions
    for d in decisions:
        if d.action != "remove":
            continue
        if live_users(d.tree.receipt.path):  # a subagent started since we looked
            d.action, d.reason = "keep", "in use by a subagent that started meanwhile"
            continue
        try:
            removal = remove_tree(d.tree, d.tree.state or state(d.tree.receipt), by="gc",
                                  boxes=boxes)
        except g.GitError as exc:
            d.action, d.reason = "failed", f"git worktree remove failed: {exc.message}"
            continue
        done = removal.done
        if removal.teardown_note:
            d.reason += f"; {removal.teardown_note}"
        d.branch_deleted = done.branch
        if done.branch:
            d.branch_note = done.note
        elif done.note:
            d.reason += f"; {done.note}"
    return decisions
