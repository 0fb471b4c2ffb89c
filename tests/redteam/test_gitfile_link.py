"""A `.git` file an agent wrote below its workspace never makes zapcli work
on another repository of the user's (an adversary's review, F3 of the third
round).

The sandbox holds `.git` read-only at the workspace's top only; below it the
agent may write a `sub/.git` FILE (or a symbolic link). It wrote `gitdir: <another repository's git
dir>` — any repository it can read, a project of the user's outside the
workspace — and copied that repository's tracked files into `sub/`. The user's
`zapcli spawn --worktree` from `sub/` took `sub/` as that repository's
checkout, and `zapcli merge` moved the other repository's `main` to the
agent's commit and rewrote its index: the user's next `git stash` or `git
reset --hard` there checked out the agent's Makefile.

Every assertion is the outside effect: the other repository's branch, index
and files as they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import MAKEFILE, agent, make_repo, project, spawn_and_merge, state
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(300)]

def _checkout(other: Path) -> tuple[Path, Path | None]:
    repo = project(other / "project")
    return repo / ".git", repo


def _bare(other: Path) -> tuple[Path, Path | None]:
    project(other / "src")
    git(other, "clone", "-q", "--bare", str(other / "src"), str(other / "bare.git"))
    return other / "bare.git", None


VICTIMS = {"another repository's .git": _checkout, "a bare repository": _bare}
PLANTS = {"a .git file": "printf 'gitdir: {git_dir}\\n' > sub/.git",
          "a .git symbolic link": "ln -s {git_dir} sub/.git"}


@pytest.mark.parametrize("plant", list(PLANTS))
@pytest.mark.parametrize("victim", list(VICTIMS))
def test_a_git_file_naming_another_repository_moves_nothing_there(zap, other, victim, plant):
    make_repo(zap.cwd)
    git_dir, work = VICTIMS[victim](other)
    before = state(git_dir, work)
    agent(zap, f"mkdir sub && printf '{MAKEFILE}' > sub/Makefile && "
               + PLANTS[plant].replace("{git_dir}", str(git_dir)))
    assert (zap.cwd / "sub" / ".git").is_symlink() or (zap.cwd / "sub" / ".git").is_file()
    zap.cwd = zap.cwd / "sub"  # later, the user starts a worktree subagent from sub/
    spawned = spawn_and_merge(zap, "printf 'all:\\n\\tid > PWNED\\n' > Makefile && "
                                   "git -c user.email=a@a -c user.name=a commit -qam 'tidy Makefile'")
    assert state(git_dir, work) == before, spawned.err
