"""A `--worktree` subagent's bash in the sandbox commits on its own branch
(git writes the shared objects and its branch's ref outside the tree), while
the repository's hooks, config and other branches stay read-only (SPEC §18).
Real git, real bwrap."""

from __future__ import annotations

import os
import subprocess

from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.agent.types import ToolContext
from zapcli.sandbox.policy import linked_git, resolve
from zapcli.sandbox.session import Sandbox
from zapcli.tools.env import scrubbed_env
from zapcli.tools.procs import JobRegistry
from zapcli.tools.shell import BashTool

pytestmark = needs_bwrap
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def _git(cwd, *args):
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_a_worktree_commits_on_its_branch_but_not_past_it(tmp_path):
    repo, tree, scratch = tmp_path / "repo", tmp_path / "trees" / "sa_x", tmp_path / "scratch"
    repo.mkdir()
    scratch.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    _git(repo, "worktree", "add", "-q", "-b", "zapcli/sa_x", str(tree))
    assert linked_git(str(repo)) == []  # an ordinary checkout gains nothing
    policy, notes = resolve("workspace", workspace=str(tree), scratch=str(scratch))
    assert not notes and str((repo / ".git" / "objects").resolve()) in policy.writable
    sandbox, jobs = Sandbox(policy, FOUND.program), JobRegistry()
    try:
        ctx = ToolContext(workspace=str(tree), cwd=str(tree), env=scrubbed_env(os.environ),
                          sandbox=sandbox)
        git = "git -c user.name=a -c user.email=a@a"
        res = BashTool(jobs).run({"command": (
            f"echo one > one.txt && {git} add one.txt && {git} commit -q -m one && echo committed; "
            f"touch {repo}/.git/hooks/post-commit; echo x >> {repo}/.git/config; "
            f"{git} branch -f main HEAD")}, ctx)
    finally:
        jobs.close()
        sandbox.close()
    assert "committed" in res.content, res.content
    assert _git(repo, "log", "--format=%s", "zapcli/sa_x").split() == ["one", "base"]
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    assert "x\n" not in (repo / ".git" / "config").read_text()
    assert _git(repo, "log", "--format=%s", "main").split() == ["base"], res.content
