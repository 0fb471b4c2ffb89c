"""Which repository zapcli's git works on, from what was recorded at spawn —
never from what an agent could have written since (issue 27, C31).

Imports `zapcli.worktrees.git`. A subagent's tree is a linked worktree: its
`.git` file names an admin folder `<common>/worktrees/<name>`, whose
`commondir` names the common git dir and whose `gitdir` names the tree's
`.git` back. Git would follow those files; zapcli does not. It takes the
common dir from the receipt, finds the admin folder there by its `gitdir`,
and then requires every one of them to agree: `commondir` leads back to the
recorded common dir, `gitdir` to the tree, the tree's `.git` to the admin
folder. Anything else — a `commondir` pointed at a planted git dir, a
`.git` file pointed elsewhere, a `gitdir` naming another folder — is refused
with what moved, and no git runs there; `zapcli worktree rm --force` still
removes the tree (git's own removal runs nothing in it). The checks read a few small files;
no git process.
"""

from __future__ import annotations

import os

from zapcli.worktrees.git import GitError, Place, Receipt

MAX_READ = 4096


def _read(path: str) -> str | None:
    """A small regular file's text (stripped), never through a symbolic link;
    None when it is missing, not a file, or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_READ).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def loose_ref(common: str, ref: str) -> str:
    """The object id a loose ref file of the repository names (`refs/heads/B`
    in the common git dir), read without git; '' when it is not one there
    (packed, a reftable, a symbolic ref, a link). Only ever a guess that a
    caller checks against git's own answer."""
    text = _read(os.path.join(common, *ref.split("/"))) or ""
    return text if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text) else ""


def _points(base: str, text: str | None, prefix: str = "") -> str | None:
    """The real path a git link file names (`text`, relative to `base`)."""
    if text is None or not text.startswith(prefix):
        return None
    target = text[len(prefix):].strip()
    return os.path.realpath(os.path.join(base, target)) if target else None


def _is_git_dir(path: str) -> bool:
    return all(os.path.isdir(os.path.join(path, d)) for d in ("objects", "refs"))


def admin_of(common: str, tree: str) -> str | None:
    """The admin folder in `common` whose `gitdir` names `tree`'s `.git`: the
    one named after the tree first (git names it so), else any other."""
    want = os.path.realpath(os.path.join(tree, ".git"))
    base = os.path.join(common, "worktrees")
    first = os.path.join(base, os.path.basename(tree.rstrip("/")))
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return None
    for admin in [first] + [os.path.join(base, n) for n in names]:
        if os.path.isdir(admin) and _points(admin, _read(os.path.join(admin, "gitdir"))) == want:
            return admin
    return None


def linked(tree: str, common: str) -> Place:
    """The place of the linked worktree at `tree` whose common git dir is
    `common`, after checking its three link files agree. Raises GitError
    saying which one moved (the message ends in what to do)."""
    tree = os.path.realpath(tree)
    common = os.path.realpath(common)
    what = "its git files were changed"
    after = "; zapcli runs no git there (check them, or zapcli worktree rm --force removes the tree)"
    if not _is_git_dir(common):
        raise GitError(f"its repository's git dir {common} is not there")
    admin = admin_of(common, tree)
    if admin is None:
        raise GitError(f"{what}: no admin folder in {common}/worktrees names {tree} (its gitdir "
                       f"file was moved or rewritten){after}")
    named = _points(admin, _read(os.path.join(admin, "commondir")))
    if named != common:
        raise GitError(f"{what}: {admin}/commondir names {named or 'nothing'}, not {common}{after}")
    dotgit = _points(tree, _read(os.path.join(tree, ".git")), "gitdir:")
    if dotgit != os.path.realpath(admin):
        raise GitError(f"{what}: {tree}/.git names {dotgit or 'nothing'}, not {admin}{after}")
    return Place(work_tree=tree, git_dir=os.path.realpath(admin), common_dir=common)


def tree(r: Receipt) -> Place:
    """The place of the tree of `r` (its admin folder checked; the objects its
    sandbox wrote read too, `zapcli.worktrees.objects`). Raises GitError."""
    if not os.path.isdir(r.path):
        raise GitError(f"its tree {r.path} does not exist")
    return _own(linked(r.path, r.common_dir), r)


def _own(place: Place, r: Receipt) -> Place:
    """`place` reading the objects the tree of `r` wrote in its sandbox too.
    Raises GitError when its git dir or common dir holds a symbolic link
    leading out of it (`gitlinks.link_out`): made since the spawn, by
    anything writing in the checkout, git would write through it."""
    from zapcli import plain
    from zapcli.gitlinks import link_out, link_out_says
    from zapcli.worktrees.objects import existing

    for git_dir in dict.fromkeys((place.git_dir, place.common_dir)):
        found = link_out(git_dir)
        if found:
            raise GitError(f"{link_out_says(git_dir, found)}; zapcli runs no git there")

    own = existing(place.common_dir, r.branch)
    return plain.replace(place, objects=own) if own else place


def checkout(r: Receipt) -> Place:
    """The place of the checkout `r` was made from: its own git dir as recorded
    (a receipt older than issue 27: the common dir, or for a checkout that is
    itself a linked tree, its admin folder, checked), reading the objects the
    tree's sandbox wrote too. Raises GitError."""
    common = os.path.realpath(r.common_dir)
    own = r.git_dir or ""
    if not own:
        dotgit = os.path.join(r.repo, ".git")
        if os.path.isdir(dotgit) and not os.path.islink(dotgit):
            own = os.path.realpath(dotgit)
        else:
            return _own(linked(r.repo, common), r)
    if not os.path.isdir(own) or not _is_git_dir(common):
        raise GitError(f"the git dir {own} of the checkout {r.repo} is not there any more")
    _keeps(r.repo, os.path.realpath(own), r)
    return _own(Place(work_tree=r.repo, git_dir=os.path.realpath(own), common_dir=common), r)


def _keeps(repo: str, own: str, r: Receipt) -> None:
    """Raises GitError unless `repo` is where the git dir `own` keeps its
    files: its `.git` is that folder, or names it and is named back
    (`paths.git_dir_at`: a `.git` file naming a repository's own git dir is
    refused). A receipt recorded from a
    repository whose `core.worktree` named another folder (before `plan`
    refused one) names that folder as the checkout: git would merge into it."""
    from pathlib import Path

    from zapcli.gitlinks import git_dir_at, gitfile_target, links_back

    found = git_dir_at(Path(repo))
    if found is None or str(found) != own:
        named = gitfile_target(Path(repo)) if found is None else None
        what = (f"names {found}" if found else
                f"names {named}, which does not name it back: {links_back(named, Path(repo))}"
                if named else "is no repository")
        raise GitError(f"the checkout {repo} recorded for it is not where its git dir {own} "
                       f"keeps its files ({repo}/.git {what}); "
                       "zapcli runs no git with that folder as the work tree. Its work is on "
                       f"branch {r.branch}: merge it by hand in the repository's own checkout "
                       f"(git merge {r.branch}); git --git-dir={r.common_dir} worktree remove "
                       f"--force {r.path} removes the tree")
