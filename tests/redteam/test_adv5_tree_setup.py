"""A new tree made from inside a subagent's own tree runs `worktree.setup`
as the person on that subagent's commits (adversary round 5, on
`zapcli.agentroots.repo_worked` / `zapcli.runner.tree._worked`).

Round 4's fix runs a new tree's setup sandboxed when the repository's top
lies strictly BELOW a folder agent work was given to write in, or its
common git dir does (other than as a noted folder's own `.git`). A
`--worktree` subagent's tree is itself a noted folder (its workspace), in
`<state>-worktrees/`, outside the person's checkout; its common git dir is
the person's `.git`. So a spawn whose folder is that tree (the person who
`cd`s into it to look, or a run whose subagent works there and delegates
with `worktree: true`) passes both checks — "the top is a noted folder
itself: the person's checkout" — and the new tree is made from the tree's
HEAD: the commit the sandboxed subagent made there.

The outside effect: the file the agent's `setup` target writes in `outside`.

Status against main at e92e5ae: SUCCEEDED (`PWNED-setup` written, by the
person's `make -s setup` run unsandboxed on the subagent's commit). Closed:
a tree made from inside a subagent's tree sets up in the sandbox
(`zapcli.runner.tree._worked`).
Class fix: decide by where the commits come from, not by where the top is:
a top that is a noted folder is the person's checkout only if it is the
common dir's own work tree (not a linked tree of it), or note zapcli's
trees as agent-made (their HEAD is agent work) and let `repo_worked` say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.redteam.repos import COMMIT, ended, new_tree, repo_with_setup
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(300)]


def test_setup_of_a_tree_made_from_a_subagent_s_tree_runs_sandboxed(zap, outside):
    repo_with_setup(zap)
    # the injection: a sandboxed --worktree subagent commits a Makefile in its own tree
    sid = zap.spawn_sh(
        "set -e; pwd; "
        f"printf 'setup:\\n\\t@id > {outside}/PWNED-setup\\n' > Makefile; "
        f"git add Makefile; {COMMIT} 'a better setup'; git log --oneline | head -3",
        "--worktree", "--sandbox", timeout=90)
    ended(zap, sid)
    out = zap("output", sid).out
    assert not list(outside.iterdir())  # its own setup ran before it wrote; the sandbox held it
    tree = Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])
    assert (tree / "Makefile").read_text().count("PWNED"), out
    # later: a spawn from the subagent's tree (the person looking at it, or a delegating run)
    zap.cwd = tree
    ran = new_tree(zap, outside)
    assert ran == [], ran
