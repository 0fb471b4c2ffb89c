"""auto-edit file-tool writes into a git dir that is not spelled `.git`
(adversary round 2 on `zapcli.approvals._control_target`).

`auto-edit` lets the built-in agent's `write`/`edit` (which run in the
unsandboxed runner) write outside the workspace, but asks before a path any
of whose components is a control name (`.git`, `.zapcli`, ...). A
repository's git dir needs no such component: `git init
--separate-git-dir`, `git clone --separate-git-dir`, a submodule's, a
worktree's common dir via a `.git` FILE (`gitdir: /somewhere/x.git`), and
every bare repository (`~/git/project.git`, hooks of a server-side repo).
Its `config` (`core.fsmonitor`) and `hooks/` run at the person's next
`git status` / `git commit` / push there.

Assertions are the outside effect: a file in `outside` written by a command
git ran as the person.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.redteam.repos import make_repo, spawn_agent, writes
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]
KEY = "sk-zaptest-adv2-0123456789"




def _agent_writes(zap, model, notes: Path, path: Path, content: str) -> None:
    """An auto-edit, unattended agent in `notes` calls `write` on `path`."""
    srv = model([{"match": "tidy", "turns": writes(path, content)}])
    zap.cwd = notes
    spawn_agent(zap, "--approval", "auto-edit", "--unattended", "--sandbox", "--", "tidy my notes")
    assert len(srv.requests) >= 2, "the write was never called"


def test_auto_edit_write_to_a_separate_git_dir(zap, model, outside):
    """~/src/other's `.git` is a FILE naming ~/src/gitdirs/other.git (git
    init --separate-git-dir). The agent (in ~/src/notes, auto-edit,
    unattended) writes that git dir's config with `core.fsmonitor`; no
    component of the path is `.git`, so nothing asks. The person's next
    `git status` in ~/src/other runs it, unsandboxed."""
    src = zap.cwd / "src"
    notes, other, gitdir = src / "notes", src / "other", src / "gitdirs" / "other.git"
    notes.mkdir(parents=True)
    other.mkdir()
    gitdir.parent.mkdir()
    subprocess.run(["git", "init", "-q", "--separate-git-dir", str(gitdir), str(other)],
                   check=True)
    assert (other / ".git").is_file()
    config = (gitdir / "config").read_text()
    evil = config + f"[core]\n\tfsmonitor = id > {outside}/PWNED-fsmonitor; false\n"
    _agent_writes(zap, model, notes, gitdir / "config", evil)
    subprocess.run(["git", "status"], cwd=other, capture_output=True, timeout=60)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran


def test_auto_edit_write_to_a_bare_repositorys_hook(zap, model, outside, tmp_path):
    """A bare repository of the person's (~/git/site.git, what they push
    to). The agent writes its `config` with `core.hooksPath` naming a folder
    of its own workspace, where its sandboxed commands may put an executable
    `pre-receive`. The person's next `git push` into it runs that hook,
    unsandboxed. (The bare repo's path has no `.git` component.)"""
    src = zap.cwd / "src"
    notes, bare, clone = src / "notes", tmp_path / "git" / "site.git", tmp_path / "site"
    notes.mkdir(parents=True)
    bare.parent.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    clone.mkdir()
    make_repo(clone)
    subprocess.run(["git", "-C", str(clone), "remote", "add", "origin", str(bare)], check=True)
    hooks = notes / "hooks"
    hooks.mkdir()
    hook = hooks / "pre-receive"
    hook.write_text(f"#!/bin/sh\nid > {outside}/PWNED-hook\n")
    hook.chmod(0o755)  # what a sandboxed `chmod +x` in the workspace makes (the workspace is its)
    config = (bare / "config").read_text()
    evil = config + f"[core]\n\thooksPath = {hooks}\n"
    _agent_writes(zap, model, notes, bare / "config", evil)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"],
                   capture_output=True, timeout=60)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran
