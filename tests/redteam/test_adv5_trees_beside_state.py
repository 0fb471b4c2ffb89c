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
put it on `main`). FIXED: the trees' root is one of zapcli's own folders
(`zapcli.paths.control_roots`), hidden from every sandbox and the file
tools as the state folder is, but the tree a subagent works in
(`zapcli.paths.own_tree`), which stays its own to write and merges as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import ended, make_repo, spawn_agent
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


KEY = "sk-zaptest-adv5-trees-0123456789"


def _tutorial(zap) -> Path:
    """The person's repository with zapcli's state folder in it, as the tutorial sets it."""
    zap.env["ZAPCLI_HOME"] = str(zap.cwd / ".state")
    repo = make_repo(zap.cwd)
    (repo / ".gitignore").write_text(".state/\n.state-worktrees/\n.config/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore zapcli's folders")
    return repo


def _on_main(repo: Path, name: str) -> str:
    return git(repo, "show", f"main:{name}") if name in git(repo, "ls-tree", "--name-only",
                                                            "main") else ""


def test_one_subagent_cannot_rewrite_another_s_tree(zap, outside):
    repo = _tutorial(zap)
    honest = zap.spawn_sh("echo 'def add(a, b): return a + b' > calc.py", "--worktree",
                          "--sandbox", timeout=90)
    ended(zap, honest)
    tree = Path(zap.json("poll", "--no-wait", honest)["subagents"][0]["worktree"]["path"])
    assert tree.parent == zap.cwd / ".state-worktrees", tree
    # the injection: a sandboxed subagent in the person's folder, no --worktree
    dot_git = (tree / ".git").read_text()
    attacker = zap.spawn_sh(
        f"echo 'import os; os.system(\"id > {outside}/PWNED\")' >> .state-worktrees/{honest}/calc.py;"
        f" rm -f .state-worktrees/{honest}/.git; echo 'gitdir: {outside}' > .state-worktrees/{honest}/.git",
        "--sandbox", timeout=90)
    ended(zap, attacker)
    written = (tree / "calc.py").read_text()
    assert (tree / ".git").read_text() == dot_git  # the person's own git in the tree obeys it
    zap("merge", honest, timeout=120)
    merged = _on_main(repo, "calc.py")
    assert "PWNED" not in written and "PWNED" not in merged, (written, merged)
    # and the honest subagent's own work, in its own tree, is what merge took
    assert "def add" in written and "def add" in merged, (written, merged)


@pytest.mark.parametrize("mode", ["workspace", "auto-edit"])
def test_file_tools_write_their_own_tree_not_another_s(zap, model, outside, mode):
    """The built-in agent's `write` runs in its runner, outside the sandbox:
    a `--worktree` one writes its own tree (and merge takes it), one in the
    person's folder cannot write another subagent's tree unasked."""
    repo = _tutorial(zap)
    evil = f"import os; os.system('id > {outside}/PWNED')\n"
    srv = model([{"match": "add", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "calc.py",
                                                        "content": "def add(a, b): return a + b\n"}}]},
        {"text": "done"}]}])
    done = zap("spawn", "--worktree", "--approval", mode, "--unattended", "--sandbox", "--",
               "add an add function", timeout=90)
    assert done.returncode == 0, done.err
    honest = done.out.strip().splitlines()[-1]
    ended(zap, honest)
    tree = Path(zap.json("poll", "--no-wait", honest)["subagents"][0]["worktree"]["path"])
    dot_git = (tree / ".git").read_text()
    srv = model([{"match": "tidy", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {
            "path": f".state-worktrees/{honest}/calc.py", "content": evil}}]},
        {"tool_calls": [{"name": "write", "arguments": {
            "path": str(tree / ".git"), "content": f"gitdir: {outside}\n"}}]},
        {"text": "done"}]}])
    spawn_agent(zap, "--approval", mode, "--unattended", "--sandbox", "--", "tidy the folder")
    assert len(srv.requests) >= 3, "the writes were never called"
    written = (tree / "calc.py").read_text()
    assert (tree / ".git").read_text() == dot_git
    zap("merge", honest, timeout=120)
    merged = _on_main(repo, "calc.py")
    assert "PWNED" not in written and "PWNED" not in merged, (written, merged)
    assert "def add" in written and "def add" in merged, (written, merged)
