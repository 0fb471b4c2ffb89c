"""`zapcli.gitlinks`: a `.git` file counts only when the git dir it names
names its folder back — a linked worktree's, a submodule's — never a plain
repository's own git dir named from elsewhere (the attack itself:
tests/redteam/test_gitfile_link.py)."""

from __future__ import annotations

from pathlib import Path

from tests.parallel.conftest import git
from zapcli.gitlinks import git_dir_at
from zapcli.paths import workspace_of


def _repo(folder: Path) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    (folder / "f").write_text("x\n")
    git(folder, "add", "f")
    git(folder, "commit", "-q", "-m", "base")
    return folder


def test_a_real_linked_worktree_and_submodule_count(tmp_path):
    repo = _repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", str(tmp_path / "tree"), "-b", "t")
    assert git_dir_at(tmp_path / "tree") == (repo / ".git" / "worktrees" / "tree").resolve()
    _repo(tmp_path / "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
        str(tmp_path / "lib"), "lib")
    assert git_dir_at(repo / "lib") == (repo / ".git" / "modules" / "lib").resolve()
    assert workspace_of(repo / "lib") == (repo / "lib").resolve()


def test_a_git_file_naming_a_repository_of_its_own_is_no_repository(tmp_path):
    other = _repo(tmp_path / "other")
    git(other, "clone", "-q", "--bare", str(other), str(tmp_path / "bare.git"))
    work = _repo(tmp_path / "work")
    for named in (other / ".git", tmp_path / "bare.git"):
        (work / "sub").mkdir(exist_ok=True)
        (work / "sub" / ".git").write_text(f"gitdir: {named}\n")
        assert git_dir_at(work / "sub") is None
        assert workspace_of(work / "sub") == work.resolve()


def test_a_git_file_naming_another_folders_worktree_or_submodule_is_no_repository(tmp_path):
    repo = _repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", str(tmp_path / "tree"), "-b", "t")
    _repo(tmp_path / "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
        str(tmp_path / "lib"), "lib")
    sub = _repo(tmp_path / "work") / "sub"
    sub.mkdir()
    for named in (repo / ".git" / "worktrees" / "tree", repo / ".git" / "modules" / "lib"):
        (sub / ".git").write_text(f"gitdir: {named}\n")
        assert git_dir_at(sub) is None


def test_a_git_symbolic_link_counts_only_inside_its_folder(tmp_path):
    other = _repo(tmp_path / "other")
    sub = _repo(tmp_path / "work") / "sub"
    sub.mkdir()
    (sub / ".git").symlink_to(other / ".git")
    assert git_dir_at(sub) is None
    (sub / ".git").unlink()
    git(sub, "init", "-q", "--separate-git-dir", str(sub / "real"))
    (sub / ".git").unlink()
    (sub / ".git").symlink_to("real")
    assert git_dir_at(sub) == (sub / "real").resolve()


def test_link_out_finds_a_link_leading_out_of_the_git_dir(tmp_path):
    """`link_out`: git writes through a symbolic link in its git dir (the
    attack: tests/redteam/test_forged_git_dir.py); one that stays inside, or
    the hooks folder (git writes nothing there), is fine."""
    from zapcli.gitlinks import link_out

    repo = _repo(tmp_path / "repo")
    other = _repo(tmp_path / "other")
    dot = repo / ".git"
    assert link_out(dot) is None
    (dot / "refs" / "heads" / "kept").mkdir()
    (dot / "refs" / "heads" / "kept" / "b").symlink_to(dot / "refs" / "heads" / "main")
    (dot / "hooks").rename(tmp_path / "hooks")
    (dot / "hooks").symlink_to(tmp_path / "hooks")
    assert link_out(dot) is None
    for entry in ("index", "refs/heads", "objects/pack", "logs", "worktrees", "config"):
        made = dot / entry
        if not made.exists():
            made.mkdir(parents=True)
        made.rename(tmp_path / "aside")
        made.symlink_to(other / ".git" / entry)
        assert link_out(dot) == (str(made), str((other / ".git" / entry).resolve())), entry
        made.unlink()
        (tmp_path / "aside").rename(made)
    assert link_out(dot) is None
