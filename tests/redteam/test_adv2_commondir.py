"""A git dir an agent forged below its workspace, with no symbolic link in
it, naming another repository's git dir as its common one (adversary round 2
on `zapcli.gitlinks.link_out`). HELD on fc58192: `worktrees.place` wants an
admin folder in that common dir's `worktrees/` naming the folder back, which
nothing in the workspace can make; kept for coverage of the link-free shape.

git reads a `commondir` file in ANY git dir, not only in a linked worktree's
admin folder: `sub/.git/commondir` naming another repository's git dir makes
that repository's refs, objects, config and `worktrees/` the common ones.
`link_out` looks for symbolic links only, and `worktrees.git.around` checks
the common dir a `commondir` names for links, not whether a plain `.git`
folder may name one at all. A sandboxed subagent writing below its workspace
makes `sub/.git` (a real folder: `HEAD` and a `commondir`); the person's
`zapcli spawn --worktree` from `sub/` would then add the tree and its branch
in the other repository, and `zapcli merge` move that repository's `main`.

The assertion is the outside effect: the other repository's branches, index
and files as they were.
"""

from __future__ import annotations

import pytest

from tests.redteam.repos import MAKEFILE, agent, make_repo, project, spawn_and_merge, state
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(300)]


def test_a_plain_git_dir_whose_commondir_names_another_repository(zap, other):
    make_repo(zap.cwd)
    work = project(other / "project")
    git_dir = work / ".git"
    before = state(git_dir, work)
    agent(zap, f"mkdir -p sub/.git && printf '{MAKEFILE}' > sub/Makefile && "
               "printf 'ref: refs/heads/main\\n' > sub/.git/HEAD && "
               f"printf '%s\\n' {git_dir} > sub/.git/commondir && "
               "git -C sub status --short")
    zap.cwd = zap.cwd / "sub"  # later, the person starts a worktree subagent from sub/
    spawned = spawn_and_merge(zap, "printf 'all:\\n\\tid > PWNED\\n' > Makefile && "
                                   "git -c user.email=a@a -c user.name=a commit -qam 'tidy Makefile'")
    assert state(git_dir, work) == before, spawned.err
