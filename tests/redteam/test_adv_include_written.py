"""Agent work writes the ignored files the person's `.worktreeinclude` names,
and the person's `worktree.setup` runs on them as the person (found by the
engineer of 6fbe1d9).

`.worktreeinclude` itself is held (a control file); the files it names are
not, and are ignored by git (local config: `config/local.mk` that the
Makefile includes, `.env`), so `git status` stays clean. A sandboxed subagent
given the person's checkout itself (no `--worktree`) writes one; the next
`--worktree` spawn copies it into its new tree, and `worktree.setup: make -s
setup` reads it. `agentroots.repo_worked` treats a repository whose top IS a
noted folder as the person's: every spawn noted its checkout, `--worktree`
ones too, so "noted" could not tell "an agent wrote in this checkout" from
"a `--worktree` subagent was spawned from it".

The same through a folder of the checkout that other work was given to
write in (the person's `writable_roots`), not the checkout's top.

The outside effect: the file the planted `make` rule writes in `outside`.

Status against main at e92e5ae: SUCCEEDED (both). Now a `--worktree` spawn
notes its tree, not the checkout it was spawned from (`agentroots.note_spawn`),
and a new tree's setup runs sandboxed when the include step copied a file
that lies in a folder agent work was given to write in (`agentroots.written`):
the planted rule runs where it cannot write outside the tree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import agent, ended, make_repo, new_tree, setup_config
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]

LOCAL = "config/local.mk"


def _persons_repo(zap, extra_config: str = "") -> Path:
    """The person's repository: a Makefile that includes an ignored local
    file their `.worktreeinclude` copies into each tree; their setup is
    `make -s setup`."""
    repo = make_repo(zap.cwd)
    (repo / "Makefile").write_text(f"-include {LOCAL}\nsetup:\n\t@echo setup\n")
    (repo / ".gitignore").write_text(f"{LOCAL}\n")
    (repo / ".worktreeinclude").write_text(f"{LOCAL}\n")
    git(repo, "add", "Makefile", ".gitignore", ".worktreeinclude")
    git(repo, "commit", "-q", "-m", "local config")
    setup_config(zap, extra_config)
    return repo


def _plant(outside: Path, name: str) -> str:
    """The injection: an ignored `config/local.mk` adding a step to `setup`."""
    return (f"mkdir -p config && printf 'setup: local\\nlocal:\\n\\t@id > {outside}/{name}\\n' "
            f"> {LOCAL}")


def test_an_agent_in_the_checkout_writes_a_file_the_include_copies(zap, outside):
    repo = _persons_repo(zap)
    agent(zap, _plant(outside, "PWNED-include"))  # sandboxed, in the checkout itself
    assert (repo / LOCAL).is_file() and not list(outside.iterdir())
    assert git(repo, "status", "--porcelain") == ""  # nothing for the person to see
    # later: the person starts a --worktree subagent
    ran = new_tree(zap, outside)
    assert ran == [], ran


def test_work_given_a_folder_of_the_checkout_writes_a_file_the_include_copies(zap, outside,
                                                                               tmp_path):
    """The person lets work elsewhere write in `<repo>/config` (their
    `writable_roots`); the checkout's top is never given to agent work."""
    repo = zap.cwd
    _persons_repo(zap, f"writable_roots: [{repo / 'config'}]\n")
    (repo / "config").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    zap.cwd = elsewhere
    agent(zap, _plant(outside, "PWNED-root").replace(LOCAL, str(repo / LOCAL))
          .replace("mkdir -p config", "true"))
    assert (repo / LOCAL).is_file() and not list(outside.iterdir())
    zap.cwd = repo
    ran = new_tree(zap, outside)
    assert ran == [], ran


def test_a_continued_unsandboxed_trees_setup_runs_sandboxed_on_an_agents_file(zap, outside,
                                                                                model):
    """A tree made again for a continued subagent that ran unsandboxed sets
    up as the person (that work could write anything the person can) — but
    its copied files are not that work's: a sandboxed subagent in the
    checkout planted one meanwhile."""
    _persons_repo(zap)
    model([{"match": "draft", "turns": [{"text": "done"}]},
           {"match": "carry on", "turns": [{"text": "done"}]}])
    spawned = zap("spawn", "--agent", "fixer", "--worktree", "--no-sandbox", "--", "draft",
                  timeout=90)
    assert spawned.returncode == 0, spawned.err
    sid = spawned.out.strip()
    ended(zap, sid)
    zap("worktree", "rm", "--force", sid, timeout=120, check=True)
    agent(zap, _plant(outside, "PWNED-continued"))  # sandboxed, in the checkout itself
    assert not list(outside.iterdir())
    again = zap("continue", sid, "carry on", timeout=90)
    assert again.returncode == 0, again.err
    ended(zap, again.out.strip())
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran
