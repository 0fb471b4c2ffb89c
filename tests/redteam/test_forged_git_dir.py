"""A git dir an agent forged below its workspace never makes zapcli's git
write into another repository of the user's.

The sandbox holds `.git` read-only at the workspace's top only; below it the
agent may make `sub/.git` a real FOLDER (so no `.git` link rule applies)
whose entries git writes through — `refs`, `refs/heads`, `objects`, `index`,
`logs` — are symbolic links into another repository's git dir elsewhere on
the machine (or a `.git` file naming a linked worktree's admin folder it
made, whose common dir has such links). The user's `zapcli spawn --worktree`
from `sub/` then made its branch in that repository, and `zapcli merge`
moved that repository's `main` to the agent's commit.

Every assertion is the outside effect: the other repository's branches,
index and files as they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redteam.repos import MAKEFILE, agent, ended, make_repo, project, spawn_and_merge, state
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(300)]

# sub/ a repository of its own on `main`, its Makefile the other repository's
START = (f"mkdir sub && printf '{MAKEFILE}' > sub/Makefile && git init -q sub && "
         "git -C sub symbolic-ref HEAD refs/heads/main && ")
LINK = "rm -rf sub/.git/{e} && ln -s {G}/{e} sub/.git/{e} && "
FORGED = {
    "refs and objects": START + LINK.format(e="refs", G="{G}") + LINK.format(e="objects", G="{G}"),
    "refs/heads and objects": (START + LINK.format(e="refs/heads", G="{G}")
                               + LINK.format(e="objects", G="{G}")),
    "every entry git writes": START + "".join(
        LINK.format(e=e, G="{G}") for e in ("refs", "objects", "logs", "index", "packed-refs")),
    "a linked worktree's common dir": (
        f"mkdir sub && printf '{MAKEFILE}' > sub/Makefile && mkdir -p .forge/worktrees/sub && "
        "ln -s {G}/refs .forge/refs && ln -s {G}/objects .forge/objects && "
        "printf 'ref: refs/heads/main\\n' > .forge/HEAD && printf '[core]\\n' > .forge/config && "
        "printf 'ref: refs/heads/main\\n' > .forge/worktrees/sub/HEAD && "
        "printf '../..\\n' > .forge/worktrees/sub/commondir && "
        "printf '%s/sub/.git\\n' \"$PWD\" > .forge/worktrees/sub/gitdir && "
        "printf 'gitdir: %s/.forge/worktrees/sub\\n' \"$PWD\" > sub/.git && "),
}


@pytest.mark.parametrize("forged", list(FORGED))
def test_a_git_dir_linking_into_another_repository_moves_nothing_there(zap, other, forged):
    make_repo(zap.cwd)
    work = project(other / "project")
    git_dir = work / ".git"
    before = state(git_dir, work)
    agent(zap, FORGED[forged].replace("{G}", str(git_dir)) + "git -C sub reset -q && git -C sub status --short")
    zap.cwd = zap.cwd / "sub"  # later, the user starts a worktree subagent from sub/
    spawned = spawn_and_merge(zap, "printf 'all:\\n\\tid > PWNED\\n' > Makefile && "
                                   "git -c user.email=a@a -c user.name=a commit -qam 'tidy Makefile'")
    assert state(git_dir, work) == before, spawned.err


def _files(git_dir: Path) -> list[tuple[str, bytes]]:
    """Every file of a git dir, with its bytes: whatever git wrote there."""
    return sorted((str(p.relative_to(git_dir)), p.read_bytes()) for p in git_dir.rglob("*")
                  if p.is_file())


@pytest.mark.parametrize("entry", ["index", "logs", "objects"])
def test_a_link_made_after_the_spawn_writes_nothing_there(zap, other, entry):
    """A repository of the user's below the top of a workspace (`sub/`), a
    tree spawned from it; then a sandboxed agent working in the workspace
    links an entry of `sub/.git` into another repository's git dir (git
    writes an index through a link, appends to reflogs and adds objects
    through a linked folder). Taking the tree's work wrote there."""
    top = zap.cwd
    (top / "sub").mkdir()
    make_repo(top / "sub")
    work = project(other / "project")
    git_dir = work / ".git"
    before, files = state(git_dir, work), _files(git_dir)
    zap.cwd = top / "sub"
    sid = zap.spawn_sh("echo x > new.txt && git add new.txt && "
                       "git -c user.email=a@a -c user.name=a commit -qm x", "--worktree", "--sandbox")
    ended(zap, sid)
    zap.cwd = top
    agent(zap, f"rm -rf sub/.git/{entry} && ln -s {git_dir}/{entry} sub/.git/{entry}")
    zap.cwd = top / "sub"
    for argv in (["diff", sid], ["merge", sid], ["merge", "--squash", sid],
                 ["merge", "--rebase", sid], ["worktree", "rm", sid]):
        zap(*argv, timeout=120)
    assert state(git_dir, work) == before
    assert [f for f, _ in _files(git_dir)] == [f for f, _ in files]
    assert _files(git_dir) == files
