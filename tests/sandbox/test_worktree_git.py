"""A `--worktree` subagent's bash in the sandbox commits on its own branch
(git writes the shared objects, its admin folder and its branch's ref outside
the tree), while the repository's hooks and config, its admin folder's link
files and every other branch stay read-only (issue 27, C31, C38). Real git,
real bwrap."""

from __future__ import annotations

import os
import subprocess

from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.agent.types import ToolContext
from zapcli.sandbox.policy import GitAccess, resolve
from zapcli.sandbox.session import Sandbox
from zapcli.tools.env import scrubbed_env
from zapcli.tools.procs import JobRegistry
from zapcli.tools.shell import BashTool
from zapcli.worktrees.create import create
from zapcli.worktrees.fence import arm, disarm
from zapcli.worktrees.git import plan
from zapcli.worktrees.objects import bring_in, folder

pytestmark = needs_bwrap
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def _git(cwd, *args):
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _bash(tree, scratch, command, git=()):
    policy, notes = resolve("workspace", workspace=str(tree), scratch=str(scratch), git=git)
    assert not notes
    sandbox, jobs = Sandbox(policy, FOUND.program), JobRegistry()
    try:
        ctx = ToolContext(workspace=str(tree), cwd=str(tree), env=scrubbed_env(os.environ),
                          sandbox=sandbox)
        return BashTool(jobs).run({"command": command}, ctx).content
    finally:
        jobs.close()
        sandbox.close()


def test_a_worktree_commits_on_its_branch_but_not_past_it(tmp_path):
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    repo.mkdir()
    scratch.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    sibling = plan(repo, tmp_path / "trees" / "sa_s", "zapcli/sa_s")
    create(sibling)
    _git(sibling.path, "commit", "-q", "--allow-empty", "-m", "sibling's")
    r = plan(repo, tmp_path / "trees" / "sa_x", "zapcli/sa_x")
    create(r)
    fence = arm(r)
    common, admin = repo / ".git", repo / ".git" / "worktrees" / "sa_x"
    assert str(admin) in fence.writable
    # the shared objects: never writable, its own folder in their place (they read-only inside)
    assert str(common / "objects") not in fence.writable
    assert (folder(str(common), r.branch), str(common / "objects")) in fence.binds
    assert {os.path.basename(p) for p in fence.readonly} == {"commondir", "gitdir",
                                                             "config.worktree"}
    access = [GitAccess(fence.root, fence.writable, fence.readonly, fence.binds, fence.covers)]
    git = "git -c user.name=a -c user.email=a@a"
    out = _bash(r.path, scratch, (
        f"echo one > one.txt && {git} add one.txt && {git} commit -q -m one && echo committed; "
        f"touch {repo}/.git/hooks/post-commit; echo x >> {repo}/.git/config; "
        f"{git} branch -f main HEAD; {git} update-ref refs/heads/zapcli/sa_s HEAD; "
        f"echo /tmp > {admin}/commondir; echo /tmp/x > {admin}/gitdir; "
        f"printf '[core]\\n\\tfsmonitor = id\\n' > {admin}/config.worktree; "
        f"mv {admin}/commondir {admin}/c2; rm -f {admin}/gitdir; "
        f"echo SEEN $(ls {common}/refs/heads/zapcli/)"), access)
    assert "committed" in out, out
    assert bring_in(r) > 0  # what the run ends with: its objects in the repository, verified
    assert _git(repo, "log", "--format=%s", "zapcli/sa_x").split() == ["one", "base"]
    assert _git(repo, "log", "--format=%s", "zapcli/sa_s").split() == ["sibling's", "base"]
    assert _git(repo, "log", "--format=%s", "main").split() == ["base"], out
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    assert "x\n" not in (repo / ".git" / "config").read_text()
    assert (admin / "commondir").read_text() == "../..\n"
    assert (admin / "gitdir").read_text().strip() == f"{r.path}/.git"
    assert (admin / "config.worktree").read_text() == ""
    assert "SEEN sa_x\n" in out  # it sees its own branch only
    disarm(r)  # a plain ref again, with its commit
    ref = common / "refs" / "heads" / "zapcli" / "sa_x"
    assert not ref.is_symlink() and _git(repo, "log", "--format=%s", "zapcli/sa_x").split()[0] == "one"


def test_an_ordinary_or_unfenced_checkout_gains_nothing(tmp_path):
    """Without the fence a linked tree's git stays read-only: nothing of a
    repository is made writable from what the tree's own `.git` file says."""
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    repo.mkdir()
    scratch.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    _git(repo, "worktree", "add", "-q", "-b", "mine/feature", str(tmp_path / "linked"))
    for root in (repo, tmp_path / "linked"):
        policy, _notes = resolve("workspace", workspace=str(root), scratch=str(scratch))
        assert policy.writable == (str(root),) and not policy.binds
