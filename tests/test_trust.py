"""`zapcli.trust` in process: what is hashed is all a loader can read."""

from __future__ import annotations

import os


def test_every_loader_reads_no_more_than_what_trust_hashes():
    """A trusted file's hash covers its first READ_BYTES + 1 bytes; a loader
    reading more would use bytes nobody trusted."""
    from zapcli import config, trust
    from zapcli.capabilities import mcpconfig, skills
    from zapcli.definitions import yamlload

    for limit in (config.MAX_CONFIG_BYTES, mcpconfig.MAX_FILE_BYTES, yamlload.MAX_FILE_BYTES,
                  skills.MAX_SKILL_BYTES):
        assert limit <= trust.READ_BYTES


def test_the_loaders_paths_are_the_ones_trust_covers(tmp_path):
    from zapcli import trust
    from zapcli.capabilities import mcpconfig, skills
    from zapcli.definitions import layers

    assert mcpconfig.config_files(tmp_path)[1] == tmp_path / trust.MCP
    assert layers.workspace_dir(tmp_path) == tmp_path / trust.DEFINITIONS
    assert skills.skill_roots(tmp_path)[:3] == [tmp_path / r for r in trust.SKILLS]


# ------------------------------------------------- `trusted:` and nested repositories


def _git(cwd, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.email=a@a", "-c", "user.name=a",
                    "-c", "protocol.file.allow=always", *args], cwd=cwd, check=True,
                   capture_output=True)


def _repo(path):
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("x\n")
    _git(path, "add", "README")
    _git(path, "commit", "-qm", "x")
    return path


def _own_files(path):
    (path / ".zapcli").mkdir(parents=True, exist_ok=True)
    (path / ".zapcli" / "mcp.json").write_text('{"mcpServers": {}}')
    return path


def _trusted(monkeypatch, tmp_path, *folders):
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text(f"trusted: [{', '.join(str(f) for f in folders)}]\n")
    monkeypatch.setenv("ZAPCLI_CONFIG_HOME", str(config))
    monkeypatch.delenv("ZAPCLI_SUBAGENT_ID", raising=False)


def test_a_trusted_folder_covers_its_repositories_but_not_one_inside_another(tmp_path, monkeypatch):
    from zapcli import trust

    src = tmp_path / "src"
    a, b = _own_files(_repo(src / "a")), _own_files(_repo(src / "b"))
    inner = _own_files(_repo(a / "pkg" / "inner"))
    _trusted(monkeypatch, tmp_path, src)
    assert trust.decide(a).how == trust.decide(b).how == "config"
    got = trust.decide(inner)
    assert got.how == "none" and got.nested_in == (src.resolve(), a.resolve())
    assert not got.allows(trust.MCP) and "zapcli trust" in (got.notice() or "")
    _trusted(monkeypatch, tmp_path, src, inner)  # named by the person itself: covered
    assert trust.decide(inner).how == "config"
    _trusted(monkeypatch, tmp_path, a)  # the outer repository as the trusted folder
    assert trust.decide(a).how == "config" and trust.decide(inner).nested_in is not None


def test_a_submodule_git_manages_is_covered_and_a_link_planted_to_it_is_not(tmp_path, monkeypatch):
    from zapcli import trust

    lib = _own_files(_repo(tmp_path / "lib"))
    _git(lib, "add", "-A")
    _git(lib, "commit", "-qm", "own files")
    outer = _repo(tmp_path / "src" / "outer")
    _git(outer, "submodule", "add", "-q", str(lib), "vendor/lib")
    _git(outer, "commit", "-qm", "sub")
    sub = outer / "vendor" / "lib"
    assert (sub / ".git").is_file() and (sub / trust.MCP).is_file()
    fake = _own_files(outer / "fake")  # a .git file pointing at the submodule's git folder
    (fake / ".git").write_text(f"gitdir: {outer / '.git' / 'modules' / 'vendor' / 'lib'}\n")
    _trusted(monkeypatch, tmp_path, tmp_path / "src")
    assert trust.decide(sub).how == "config"
    assert trust.decide(fake).nested_in == (tmp_path.resolve() / "src", outer.resolve())


def test_a_dot_git_naming_nothing_makes_no_workspace(tmp_path):
    from zapcli.paths import git_dir_at, workspace_of

    top = _repo(tmp_path / "top")
    (top / "sub").mkdir()
    (top / "sub" / ".git").write_text("gitdir: /nowhere\n")
    (top / "empty" / ".git").mkdir(parents=True)
    (top / "fifo").mkdir()
    os.mkfifo(top / "fifo" / ".git")
    for folder in ("sub", "empty", "fifo"):
        assert workspace_of(top / folder) == top.resolve(), folder
    assert git_dir_at(top) == (top / ".git").resolve()
    _git(top, "worktree", "add", "-q", str(tmp_path / "linked"))
    assert workspace_of(tmp_path / "linked") == (tmp_path / "linked").resolve()
