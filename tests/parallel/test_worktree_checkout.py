"""Which checkout a `--worktree` spawn records (`zapcli.worktrees.git.plan`):
the folder whose `.git` it is, found by zapcli and named to git outright —
never the folder a repository's configuration (`core.worktree`) names
(an adversary's review, F4; the attack itself: tests/redteam/test_nested_checkout.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.parallel.conftest import git
from zapcli.errors import UsageError
from zapcli.worktrees.git import plan


def _repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("x\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "x")
    return path


def _plan(cwd: Path, tmp_path: Path):
    return plan(cwd, tmp_path / "trees" / "sa_x", "zapcli/sa_x")


def test_the_checkout_is_the_folder_its_dot_git_is_in(tmp_path):
    repo = _repo(tmp_path / "repo").resolve()
    (repo / "pkg" / "deep").mkdir(parents=True)
    r = _plan(repo / "pkg" / "deep", tmp_path)
    assert (r.repo, r.subdir, r.git_dir, r.common_dir) == (
        str(repo), "pkg/deep", str(repo / ".git"), str(repo / ".git"))
    assert r.base == git(repo, "rev-parse", "HEAD")


def test_a_linked_tree_and_a_submodule_are_checkouts_of_their_own(tmp_path):
    repo = _repo(tmp_path / "repo").resolve()
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    r = _plan(tmp_path / "linked", tmp_path)
    assert r.repo == str((tmp_path / "linked").resolve()) and r.common_dir == str(repo / ".git")
    lib = _repo(tmp_path / "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    sub = repo / "vendor" / "lib"
    r = _plan(sub, tmp_path)  # its core.worktree names its own folder back: fine
    assert r.repo == str(sub) and r.git_dir == str(repo / ".git" / "modules" / "vendor" / "lib")
    assert r.base == git(sub, "rev-parse", "HEAD")


@pytest.mark.parametrize("setting", ["core.worktree", "core.bare"])
def test_a_repository_whose_configuration_moves_its_work_tree_is_refused(tmp_path, setting):
    repo = _repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(repo, "config", setting, str(elsewhere) if setting == "core.worktree" else "true")
    with pytest.raises(UsageError) as got:
        _plan(repo, tmp_path)
    assert setting in str(got.value) and "git config" in str(got.value), got.value
    assert os.listdir(elsewhere) == []


def test_a_dot_git_naming_nothing_is_passed_over(tmp_path):
    """As the workspace is found: `sub/.git` naming no git folder is no
    repository, so the checkout is the one around it."""
    repo = _repo(tmp_path / "repo").resolve()
    (repo / "sub").mkdir()
    (repo / "sub" / ".git").write_text("gitdir: /nowhere\n")
    r = _plan(repo / "sub", tmp_path)
    assert (r.repo, r.subdir) == (str(repo), "sub")
