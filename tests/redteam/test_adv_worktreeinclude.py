"""`.worktreeinclude` lets agent work choose the files the person's own
`worktree.setup` command runs on, unsandboxed (adversary round, focus 2).

`worktree.setup` is the person's command (their config.yaml only) and runs
unsandboxed in each new tree; a new tree should hold what git checks out and
the person's ignored files. But `.worktreeinclude` and `.gitignore` at the
checkout's top are on no control list: a sandboxed subagent in the checkout
(no `--worktree`) writes both and an ignored `GNUmakefile` (which `make`
reads before `Makefile`), all ignored so `git status` stays clean. The next
`--worktree` spawn copies it in, and `make setup` runs it as the person.

The same for any setup: `python -m pip ...` (a copied `pip/`), `npm ci`
(`.npmrc`), `uv sync` (`uv.toml`), ...

Status against main at 1aeb7cf: SUCCEEDED. Now `.worktreeinclude` is a control
file (held read-only at the top): the agent cannot choose what is copied.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import agent, ended, make_repo
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


def _repo_with(zap, step: str) -> None:
    """A repository whose Makefile has a target the person's `worktree.<step>` runs."""
    target = {"setup": "setup", "teardown": "clean"}[step]
    repo = make_repo(zap.cwd)
    (repo / "Makefile").write_text(f"{target}:\n\t@echo {target}\n")
    git(repo, "add", "Makefile")
    git(repo, "commit", "-q", "-m", f"{target} target")
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"worktree:\n  {step}: make -s {target}\n")


def test_worktreeinclude_copies_an_agents_file_into_the_persons_setup(zap, outside):
    _repo_with(zap, "setup")
    agent(zap, "printf 'GNUmakefile\\n.gitignore\\n.worktreeinclude\\n' > .gitignore\n"
               "echo GNUmakefile > .worktreeinclude || true\n"
               f"printf 'setup:\\n\\t@id > {outside}/PWNED-setup\\n' > GNUmakefile")
    # later: the person starts a --worktree subagent
    sid = zap.spawn_sh("true", "--worktree", "--sandbox", timeout=90)
    ended(zap, sid)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran


@pytest.mark.xfail(strict=True, reason="DOCUMENTED RISK on main 1aeb7cf: worktree.teardown runs "
                   "unsandboxed on the agent's files (security.md); succeeds")
def test_teardown_runs_the_trees_makefile_unsandboxed(zap, outside):
    """A `--worktree` subagent edits its tree's Makefile (no control file);
    the person's `worktree.teardown: make -s clean` runs it, unsandboxed,
    when the person removes the tree (`worktree rm`; also `pick`, `gc`).
    security.md says a tree's files are the agent's by teardown — this test
    shows what that means for a build-tool teardown."""
    _repo_with(zap, "teardown")
    sid = zap.spawn_sh(f"printf 'clean:\\n\\t@id > {outside}/PWNED-teardown\\n' > Makefile",
                       "--worktree", "--sandbox", timeout=90)
    ended(zap, sid)
    assert not list(outside.iterdir())  # the sandbox held it while it ran
    zap("worktree", "rm", "--force", sid, timeout=120)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran
