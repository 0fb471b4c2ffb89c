"""Subagents' trees lie open to other agent work when the state folder is in
a workspace (adversary round 5, on `zapcli.worktrees.root` /
`zapcli.paths.control_roots`).

The trees live in `<state>-worktrees/`, beside the state folder. The state
folder is hidden from every sandbox (`control_roots`); its `-worktrees`
sibling is not. The tutorial (docs/tutorial/first-fleet.md) has the person
`export ZAPCLI_HOME=$PWD/.state` in the folder they work in, so the trees
land in `$PWD/.state-worktrees/` — inside the workspace, writable to any
sandboxed subagent spawned there without `--worktree`.

One such subagent (an injected `sh`) rewrites another subagent's result in
that one's tree: the person's `zapcli diff`/`merge` of the other subagent
shows and takes it as that subagent's work. The same reach lets it replace
the tree's `.git` file (only a writable root's top `.git` is held).

The outside effect: the other subagent's tree (its work, not the
attacker's workspace) holds the attacker's line, and `zapcli merge` of that
subagent puts it on the person's branch.

Status against main at e92e5ae: SUCCEEDED (the honest subagent's
`calc.py` ends with the attacker's `os.system(...)`, and `zapcli merge`
put it on `main`). Class fix: the trees'
root is one of zapcli's own folders (hidden, or read-only, from every
sandbox but the tree's own), or placed where no workspace can hold it
(refuse a state folder inside a writable root).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import ended, make_repo
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


@pytest.mark.xfail(strict=True, reason="OPEN HOLE: <state>-worktrees is not one of zapcli's own "
                   "folders: with the state folder in a workspace, its sandboxed work rewrites "
                   "other subagents' trees")
def test_one_subagent_cannot_rewrite_another_s_tree(zap, outside):
    zap.env["ZAPCLI_HOME"] = str(zap.cwd / ".state")  # as the tutorial sets it
    repo = make_repo(zap.cwd)
    (repo / ".gitignore").write_text(".state/\n.state-worktrees/\n.config/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore zapcli's folders")
    honest = zap.spawn_sh("echo 'def add(a, b): return a + b' > calc.py", "--worktree",
                          "--sandbox", timeout=90)
    ended(zap, honest)
    tree = Path(zap.json("poll", "--no-wait", honest)["subagents"][0]["worktree"]["path"])
    assert tree.parent == zap.cwd / ".state-worktrees", tree
    # the injection: a sandboxed subagent in the person's folder, no --worktree
    attacker = zap.spawn_sh(
        f"echo 'import os; os.system(\"id > {outside}/PWNED\")' >> .state-worktrees/{honest}/calc.py",
        "--sandbox", timeout=90)
    ended(zap, attacker)
    written = (tree / "calc.py").read_text()
    zap("merge", honest, timeout=120)
    merged = git(repo, "show", "main:calc.py") if "calc.py" in git(repo, "ls-tree", "--name-only",
                                                                     "main") else ""
    assert "PWNED" not in written and "PWNED" not in merged, (written, merged)
