"""A repository a sandboxed subagent makes below its workspace never moves
the checkout zapcli merges into (an adversary's review, F4).

The agent makes `sub/` a repository (allowed: only the top's `.git` is held)
whose config sets `core.worktree` to a folder outside every workspace. The
user's `zapcli spawn --worktree` from `sub/` recorded that folder as the
checkout (git's `--show-toplevel` honours `core.worktree`), and `zapcli
merge` fast-forwarded into it. Before: the agent's `planted.txt` appeared in
`outside`.

Every assertion is the outside effect: a file in `outside`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.redteam.repos import COMMIT, agent, ended, make_repo, spawn_and_merge
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]



# ---------------------------------------------------------------------- F4


MOVE_THE_WORK_TREE = {
    "core.worktree in sub/.git": (
        "mkdir -p sub && cd sub && git init -q && echo 'write planted.txt' > NOTES && "
        f"git add NOTES && {COMMIT} base && git rm -q --cached NOTES && "
        "git config core.worktree {outside}"),
    "core.worktree in a git dir sub/.git names": (
        "mkdir -p sub && git init -q --bare .store && git --git-dir=.store config core.bare false && "
        "printf 'gitdir: ../.store\\n' > sub/.git && cd sub && echo n > NOTES && "
        f"git add NOTES && {COMMIT} base && git rm -q --cached NOTES && "
        "git config core.worktree {outside}"),
}


@pytest.mark.parametrize("how", list(MOVE_THE_WORK_TREE))
def test_f4_merge_never_writes_into_the_folder_a_planted_core_worktree_names(zap, outside, how):
    make_repo(zap.cwd)
    (outside / "rc").write_text("original\n")
    agent(zap, MOVE_THE_WORK_TREE[how].replace("{outside}", str(outside)))
    zap.cwd = zap.cwd / "sub"  # later, the user starts a worktree subagent from sub/
    spawned = spawn_and_merge(zap, "echo 'written by the agent' > planted.txt")
    assert sorted(p.name for p in outside.iterdir()) == ["rc"], spawned.err
    assert (outside / "rc").read_text() == "original\n"


def test_f4_a_receipt_naming_another_folder_as_the_checkout_is_refused(zap, outside):
    """A tree recorded before the fix, whose receipt names as its checkout
    the folder a planted core.worktree named (here written into its record):
    `diff`, `merge` and `worktree rm` run no git with that folder as the
    work tree."""
    repo = make_repo(zap.cwd)
    sid = zap.spawn_sh("echo 'written by the agent' > planted.txt", "--worktree")
    ended(zap, sid)
    trail = Path(zap.env["ZAPCLI_HOME"]) / "subagents" / f"{sid}.jsonl"
    was = f'"repo":{json.dumps(str(repo))}'
    assert was in trail.read_text()
    trail.write_text(trail.read_text().replace(was, f'"repo":{json.dumps(str(outside))}'))
    for argv in (["diff", sid], ["merge", sid], ["merge", "--squash", sid],
                 ["merge", "--rebase", sid], ["worktree", "rm", sid]):
        zap(*argv, timeout=120)
    assert sorted(p.name for p in outside.iterdir()) == []
