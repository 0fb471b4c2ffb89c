"""Links on the sandbox's paths never abort it with bwrap's own error: a
state folder reached through a link (Fedora Silverblue's /home -> var/home,
a ZAPCLI_HOME symlinked elsewhere) sets up as any other, and a control name
that is a link is refused in words (tests/redteam covers what an agent could
do through one) — at spawn already, where it can be known, with the ways
out that fit the spawn."""

from __future__ import annotations

import os
from pathlib import Path

from tests.parallel.conftest import git
from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.agent.types import ToolContext
from zapcli.sandbox.links import problems, ways_out
from zapcli.sandbox.policy import resolve
from zapcli.sandbox.session import Sandbox
from zapcli.tools.env import scrubbed_env
from zapcli.tools.procs import JobRegistry
from zapcli.tools.shell import BashTool


@needs_bwrap
def test_a_scratch_folder_reached_through_a_link_sets_up(tmp_path):
    ws, state = tmp_path / "ws", tmp_path / "real-state"
    (state / "subagents" / "sa_x.tmp").mkdir(parents=True)
    ws.mkdir()
    os.symlink(state, tmp_path / "state")
    scratch = tmp_path / "state" / "subagents" / "sa_x.tmp"
    policy, _ = resolve("workspace", workspace=str(ws), scratch=str(scratch),
                        hidden=[str(tmp_path / "state")])
    box, jobs = Sandbox(policy, FOUND.program), JobRegistry()
    try:
        ctx = ToolContext(workspace=str(ws), cwd=str(ws), env=scrubbed_env(os.environ), sandbox=box)
        res = BashTool(jobs).run({"command": "echo kept > $TMPDIR/f && cat $TMPDIR/f"}, ctx)
        assert res.ok and "kept" in res.content, res.content
    finally:
        jobs.close()
        box.close()


def test_control_names_that_are_links_are_named(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "realgit").mkdir(parents=True)
    (ws / ".git").symlink_to("realgit")
    (ws / ".vscode").symlink_to(tmp_path)
    (ws / ".zapcli").mkdir()
    said = problems([str(ws)], [".git", ".zapcli", ".vscode/tasks.json", ".envrc"])
    assert len(said) == 2, said
    assert said[0].startswith(f"the sandbox cannot keep {ws}/.git read-only: it is a symbolic "
                              "link (to realgit)")
    assert f"{ws}/.vscode" in said[1]
    link = f"{ws}/.git"
    assert ways_out(link, full=False, worktree=True) == (
        f'replace the link with a copy of what it points to (cp --remove-destination '
        f'"$(readlink -f {link})" {link}); spawn with --worktree (a tree has only what git checks '
        'out: a link git does not track is not in it); or spawn with --no-sandbox (its commands '
        'run unsandboxed, as you)')
    assert "--approval full" in ways_out(link, full=True, worktree=False)
    assert "spawn with" not in ways_out(link, full=False, worktree=False, unsandboxed=False)


def _stowed(zap, tmp_path: Path) -> Path:
    """The workspace's `.tool-versions` is a link into the person's dotfiles (GNU stow)."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "tool-versions").write_text("python 3.12.1\n")
    link = zap.cwd / ".tool-versions"
    link.symlink_to(dotfiles / "tool-versions")
    return link


def _made(zap) -> list[str]:
    """What spawn left in the state folder: records, trails, queued environments."""
    folder = zap.home / "subagents"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@needs_bwrap
def test_spawn_refuses_a_linked_control_file_at_once_and_says_what_fits(zap, tmp_path):
    """A control file that is a link makes every sandboxed start fail; spawn
    says so before an id (exit 2, nothing made), with the ways out that fit
    it: `--approval full` is no way out for `--cli sh`, and is for an agent."""
    link = _stowed(zap, tmp_path)
    sh = zap("spawn", "--cli", "sh", "--sandbox", "--", "true")
    assert sh.returncode == 2 and sh.out == "", (sh.returncode, sh.out, sh.err)
    assert f"{link} read-only: it is a symbolic link" in sh.err and "Traceback" not in sh.err
    assert "--no-sandbox" in sh.err and "--worktree" in sh.err and "--approval" not in sh.err
    assert _made(zap) == []
    model = {"ZAPCLI_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9", "OPENAI_API_KEY": "sk-x"}
    agent = zap("spawn", "--", "tidy up", env=model)  # the built-in agent: sandboxed where it can
    assert agent.returncode == 2 and agent.out == "" and "--approval full" in agent.err, agent.err
    assert _made(zap) == []
    # the ways out it gives work: a tree has only what git checks out
    git(zap.cwd, "init", "-q", "-b", "main")
    git(zap.cwd, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty",
        "-m", "base")
    sid = zap.spawn_sh("true", "--worktree", "--sandbox")
    assert zap.wait_status(sid) == "completed", zap("poll", sid).out


@needs_bwrap
def test_a_link_made_after_the_spawn_is_still_refused_at_the_start(zap, tmp_path):
    """Things change between a spawn and its start (`--after` another): the
    start checks again, and nothing of the work runs."""
    ran = tmp_path / "ran"
    first = zap.spawn_sh("sleep 2")
    later = zap.spawn_sh(f"touch {ran}", "--sandbox", "--after", first)
    _stowed(zap, tmp_path)
    assert zap.wait_status(later) == "failed"
    reason = zap.json("poll", "--no-wait", later)["subagents"][0]["reason"]
    assert "is a symbolic link" in reason and "--approval" not in reason, reason
    assert not ran.exists()
