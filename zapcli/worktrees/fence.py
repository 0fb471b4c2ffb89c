"""What a sandboxed agent may write of its tree's git: exactly what a commit
on its own branch writes, and nothing that names another repository, another
tree or another branch (issue 27, C31 and C38).

Imports `zapcli.worktrees.git`, `zapcli.worktrees.place`, `zapcli.worktrees.objects`,
`zapcli.worktrees.create`
(the repository's worktree lock). `arm` prepares a
subagent's tree before its sandbox starts and returns the `Fence` the
sandbox is built from:

- writable: the tree's admin folder (index, HEAD, logs/HEAD, ORIG_HEAD...);
- objects: the tree's own object folder in place of the shared `objects/`,
  which is bound read-only inside it (`zapcli.worktrees.objects`): new
  objects, never a changed or removed one of the repository's;
- read-only inside that folder, each file bound over itself: `commondir`,
  `gitdir`, `config.worktree` (made empty when missing, so git's write of
  it — a lock file renamed over it — fails on the mount point);
- the branch's ref: git writes a ref as `<ref>.lock` renamed over `<ref>`,
  so its folder must be writable — and `refs/heads/zapcli/` holds every
  sibling's branch. The ref therefore lives in a folder of its own,
  `<common>/zapcli-branches/<name>/`, which the sandbox binds over
  `refs/heads/zapcli/` (the agent sees its own branch there and no other);
  outside, `refs/heads/zapcli/<id>` is a symbolic link to it, which git
  reads through. A write outside (zapcli's `keep`, a person's `git branch
  -f`) replaces the link with a plain ref, as git always writes; `disarm`
  does the same before a tree goes;
- the branch's reflog file, bound writable by itself (git appends to it).

A branch with no folder part (`refs/heads/main`) cannot be fenced this way;
zapcli's branches are `zapcli/<id>`.
"""

from __future__ import annotations

import os

from zapcli.plain import frozen
from zapcli.worktrees import git as g
from zapcli.worktrees import objects
from zapcli.worktrees.place import _read

HOME = "zapcli-branches"  # in the common git dir: one folder per fenced branch
READONLY = ("commondir", "gitdir", "config.worktree")


@frozen
class Fence:
    """Real paths for the sandbox of one tree."""

    root: str  # the tree
    writable: tuple[str, ...]  # folders and files bound read-write over themselves
    readonly: tuple[str, ...]  # files bound read-only over themselves
    # (the branch's own folder, the ref folder it replaces), (its own objects, the shared ones)
    binds: tuple[tuple[str, str], ...]
    # (source, target) bound read-only: the shared objects inside its own, its own `info/`
    covers: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"root": self.root, "writable": list(self.writable),
                "readonly": list(self.readonly), "binds": [list(b) for b in self.binds],
                "covers": [list(c) for c in self.covers]}


def _ref_paths(common: str, branch: str) -> tuple[str, str, str]:
    """(the loose ref file, the folder it lies in, its branch's own folder)."""
    ref = os.path.join(common, "refs", "heads", *branch.split("/"))
    own = os.path.join(common, HOME, branch.replace("/", "%"))
    return ref, os.path.dirname(ref), own


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.zapcli-{os.getpid()}"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _locked_replace(ref: str, make: str, value: str = "") -> None:
    """Replace `ref` as git does (`<ref>.lock`, made exclusively, renamed over
    it): with a symbolic link to `make`, or with `value` when `make` is ''.
    Raises GitError when the lock is held (git is writing the ref now)."""
    lock = ref + ".lock"
    try:
        if make:
            os.symlink(make, lock)
        else:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with open(fd, "w", encoding="ascii") as fh:
                fh.write(value + "\n")
    except FileExistsError:
        raise g.GitError(f"{lock} exists: git is writing the branch now, or a crashed git left "
                         "it (remove it if no git runs)") from None
    try:
        os.replace(lock, ref)
    except OSError:
        os.unlink(lock)
        raise


def _tip(where: g.Place, branch: str) -> str:
    out = g.git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"], where,
                check=False)
    tip = out.stdout.strip()
    if out.returncode != 0 or not tip:
        raise g.GitError(f"its branch {branch} does not name a commit")
    return tip


def arm(r: g.Receipt) -> Fence:
    """Make the tree of `r` ready for its sandbox (its admin files checked
    against the receipt, the branch moved into its own folder, the files to
    bind made) and say what the sandbox binds. Under the repository's
    worktree lock. Raises GitError."""
    from zapcli.worktrees.create import _locked

    with _locked(r):
        return _arm(r)


def _arm(r: g.Receipt) -> Fence:
    tree = r.tree()
    admin, common = tree.git_dir, tree.common_dir
    readonly = []
    for name in READONLY:
        path = os.path.join(admin, name)
        if not os.path.lexists(path):
            open(path, "a", encoding="utf-8").close()  # noqa: SIM115 - an empty file to bind
        readonly.append(path)
    ref, folder, own = _ref_paths(common, r.branch)
    if folder == os.path.join(common, "refs", "heads"):
        raise g.GitError(f"its branch {r.branch} has no folder of its own to fence")
    tip = _tip(r.checkout(), r.branch)
    os.makedirs(own, exist_ok=True)
    leaf = os.path.join(own, os.path.basename(ref))
    for name in os.listdir(own):  # what an earlier run left in its folder: only its branch
        if name != os.path.basename(ref):
            _remove(os.path.join(own, name))
    if os.path.islink(leaf) or (os.path.lexists(leaf) and not os.path.isfile(leaf)):
        _remove(leaf)
    if _read(leaf) != tip:
        _write_atomic(leaf, tip + "\n")
    target = os.path.relpath(leaf, folder)
    if not (os.path.islink(ref) and os.readlink(ref) == target):
        os.makedirs(folder, exist_ok=True)
        _locked_replace(ref, target)
    log = os.path.join(common, "logs", "refs", "heads", *r.branch.split("/"))
    os.makedirs(os.path.dirname(log), exist_ok=True)
    if not os.path.lexists(log):
        open(log, "a", encoding="utf-8").close()  # noqa: SIM115 - git appends to it
    writable = [admin]
    if os.path.isfile(log) and not os.path.islink(log):
        writable.append(log)
    shared = os.path.join(common, "objects")
    store = objects.prepare(common, r.branch)
    covers = ((shared, os.path.join(shared, objects.SHARED)),
              (os.path.join(store, "info"), os.path.join(shared, "info")))
    return Fence(tree.work_tree, tuple(writable), tuple(readonly),
                 ((own, folder), (store, shared)), covers)


def _remove(path: str) -> None:
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def disarm(r: g.Receipt) -> None:
    """Put the branch of `r` back where git keeps a branch (a plain ref with
    the value its own folder holds) and drop that folder; nothing when it
    was never fenced. A branch its agent deleted in its folder is deleted.
    Raises GitError when the ref is locked."""
    common = os.path.realpath(r.common_dir)
    ref, folder, own = _ref_paths(common, r.branch)
    leaf = os.path.join(own, os.path.basename(ref))
    if os.path.islink(ref) and os.readlink(ref) == os.path.relpath(leaf, folder):
        value = _read(leaf) or ""
        if len(value) >= 40 and all(c in "0123456789abcdef" for c in value):
            _locked_replace(ref, "", value)
        else:
            os.unlink(ref)
    if os.path.isdir(own) and not os.path.islink(ref):
        _remove(own)
