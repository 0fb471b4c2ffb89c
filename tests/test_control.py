"""`zapcli.control.of_root`: the names a root's own files add — every file
git reads as the repository's configuration and the folder `core.hooksPath`
names (git asked, real git), the file `.yarnrc.yml`'s `yarnPath` (read as
YAML) or `.yarnrc`'s `yarn-path` (yarn 1's format) names, only when inside
the root; read, never run."""

from __future__ import annotations

import subprocess

import pytest

from zapcli import control, gitconfigs


@pytest.mark.parametrize("rc,text", [
    (".yarnrc.yml", "yarnPath: .yarn/releases/yarn-4.1.0.cjs\n"),
    (".yarnrc.yml", "nodeLinker: node-modules\nyarnPath: '.yarn/releases/yarn-4.1.0.cjs'  # pinned\n"),
    (".yarnrc.yml", 'yarnPath: "./.yarn/releases/yarn-4.1.0.cjs"\n'),
    (".yarnrc", 'yarn-path ".yarn/releases/yarn-4.1.0.cjs"\n'),
    (".yarnrc", "# yarn 1\nyarn-path ./.yarn/releases/yarn-4.1.0.cjs\n"),
    # every spelling yarn's YAML reads as the top-level yarnPath (adversary round 4)
    (".yarnrc.yml", "\ufeffyarnPath: .yarn/releases/yarn-4.1.0.cjs\n"),
    (".yarnrc.yml", "yarnPath : .yarn/releases/yarn-4.1.0.cjs\n"),
    (".yarnrc.yml", '"yarnPath": ".yarn/releases/yarn-4.1.0.cjs"\n'),
    (".yarnrc.yml", "{yarnPath: .yarn/releases/yarn-4.1.0.cjs, nodeLinker: pnp}\n"),
    (".yarnrc.yml", "  yarnPath: .yarn/releases/yarn-4.1.0.cjs\n"),  # indented: still the top level
    (".yarnrc.yml", "x: &p .yarn/releases/yarn-4.1.0.cjs\nyarnPath: *p\n"),
    (".yarnrc.yml", "yarnPath: >-\n  .yarn/releases/yarn-4.1.0.cjs\n"),
    (".yarnrc.yml", "# \xff not utf-8\nyarnPath: .yarn/releases/yarn-4.1.0.cjs\n"),
    # yarn 2+ reads a .yarnrc.yml that starts as a yarn 1 lockfile in yarn 1's format
    (".yarnrc.yml", '# yarn lockfile v1\nyarnPath ".yarn/releases/yarn-4.1.0.cjs"\n'),
    # yarn 1's format: a colon or not, quotes or not, more keys before it
    (".yarnrc", "\ufeffyarn-path: .yarn/releases/yarn-4.1.0.cjs\n"),
    (".yarnrc", '"yarn-path" ".yarn/releases/yarn-4.1.0.cjs"  # pinned\n'),
    (".yarnrc", '"yarn-path":".yarn/releases/yarn-4.1.0.cjs"\n'),
    (".yarnrc", "other, yarn-path .yarn/releases/yarn-4.1.0.cjs\n"),
    (".yarnrc", "yarn-path   .yarn/releases/yarn-4.1.0.cjs\r\n"),
])
def test_the_yarn_a_yarnrc_names_is_added(tmp_path, rc, text):
    (tmp_path / rc).write_bytes(text.encode().replace(b"\xc3\xbf", b"\xff"))
    assert control.of_root(str(tmp_path), ("x",)) == ("x", ".yarn/releases/yarn-4.1.0.cjs")


def test_an_absolute_yarn_path_inside_the_root_is_added(tmp_path):
    (tmp_path / ".yarnrc.yml").write_text(f"yarnPath: {tmp_path}/tools/yarn.cjs\n")
    assert control.of_root(str(tmp_path), ()) == ("tools/yarn.cjs",)


@pytest.mark.parametrize("text", ["yarnPath: /usr/lib/yarn.cjs\n", "yarnPath: ../yarn.cjs\n",
                                  "tools:\n  yarnPath: nested.cjs\n", "yarnPath:\n", "plugins: []\n",
                                  "- yarnPath: a.cjs\n", "# yarnPath: a.cjs\n", "yarnPath: ${HOME}/y.cjs\n"])
def test_a_yarn_path_outside_the_root_or_not_one_adds_nothing(tmp_path, text):
    (tmp_path / ".yarnrc.yml").write_text(text)
    assert control.of_root(str(tmp_path), ("x",)) == ("x",)


def test_a_yarnrc_yml_that_does_not_parse_holds_the_yarn_folder(tmp_path):
    """What yarn would run is not known: its usual folder is held whole."""
    (tmp_path / ".yarnrc.yml").write_text("yarnPath: [.yarn/releases/yarn.cjs\n")
    assert control.of_root(str(tmp_path), ()) == (".yarn",)


def test_a_variable_in_a_yarn_path_holds_the_folder_before_it(tmp_path):
    (tmp_path / ".yarnrc.yml").write_text("yarnPath: .yarn/releases/yarn-${YARN_V}.cjs\n")
    assert control.of_root(str(tmp_path), ()) == (".yarn/releases",)


def test_hooks_path_and_yarn_path_both(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.hooksPath", ".githooks"], check=True)
    (tmp_path / ".yarnrc").write_text("yarn-path tools/yarn.js\n")
    assert set(control.of_root(str(tmp_path), (".git",))) == {".git", ".githooks", "tools/yarn.js"}


def test_mise_environment_files_that_exist_are_added(tmp_path):
    """`mise.{env}.toml` and its kin, read where MISE_ENV names the
    environment: which names matter is not known in advance, so those that
    exist are held."""
    for name in ("mise.production.toml", ".mise.staging.local.toml", ".config/mise.ci.toml",
                 "mise/config.dev.toml", "mise.toml", ".config/mise.toml", "notmise.x.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert set(control.of_root(str(tmp_path), ("mise.toml",))) == {
        "mise.toml", "mise.production.toml", ".mise.staging.local.toml", ".config/mise.ci.toml",
        "mise/config.dev.toml"}


def _git(cwd, *args):
    cwd.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


@pytest.mark.parametrize("key,value", [("include.path", "../.gitconfig"),
                                       ("include.path", "../tools/git/config"),
                                       ("includeIf.onbranch:release.path", "../tools/git/config"),
                                       ("include.path", "{root}/tools/git/config")])
def test_every_file_the_repository_config_includes_is_added(tmp_path, key, value):
    """There or not, whatever its condition: git reads it as the repository's config."""
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", key, value.format(root=tmp_path))
    target = value.replace("../", "").replace("{root}/", "")
    assert control.of_root(str(tmp_path), (".git",)) == (".git", target)


def test_an_included_files_own_includes_are_added(tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "include.path", "../.gitconfig")
    (tmp_path / ".gitconfig").write_text("[include]\n\tpath = tools/more\n")
    assert control.of_root(str(tmp_path), (".git",)) == (".git", ".gitconfig", "tools/more")


def test_a_relative_hooks_path_from_the_persons_own_config(tmp_path, monkeypatch):
    """git resolves it in each work tree: the root's folder is added, and a
    root below the top gets it only when it lies inside."""
    glob = tmp_path / "global"
    glob.write_text("[core]\n\thooksPath = .githooks\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(glob))
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    _git(repo, "init", "-q")
    assert control.of_root(str(repo), (".git",)) == (".git", ".githooks")
    assert control.of_root(str(repo / "sub"), ()) == ()


def test_the_repository_setting_wins_over_the_persons(tmp_path, monkeypatch):
    glob = tmp_path / "global"
    glob.write_text("[core]\n\thooksPath = .githooks\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(glob))
    repo = tmp_path / "repo"
    _git(repo, "init", "-q")
    _git(repo, "config", "core.hooksPath", "tools/hooks")
    assert control.of_root(str(repo), (".git",)) == (".git", "tools/hooks")


def test_a_git_dir_in_the_environment_does_not_change_the_repository(tmp_path, monkeypatch):
    other = tmp_path / "other"
    _git(other, "init", "-q")
    repo = tmp_path / "repo"
    _git(repo, "init", "-q")
    _git(repo, "config", "include.path", "../.gitconfig")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert control.of_root(str(repo), (".git",)) == (".git", ".gitconfig")


def test_a_config_file_git_cannot_read_is_added(tmp_path):
    """git refuses the whole configuration: the file it names is held (else
    agent work could mend it into one that runs a command)."""
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "include.path", "../.gitconfig")
    (tmp_path / ".gitconfig").write_text("[core\n")
    assert control.of_root(str(tmp_path), (".git",)) == (".git", ".gitconfig")


def test_what_another_roots_repository_reads_is_held_where_it_lies(tmp_path):
    """A project's `core.hooksPath` and include in a tooling folder beside
    it, both given to write in: the tooling root holds them (its own
    repository, if any, does not read them)."""
    project, tooling = tmp_path / "project", tmp_path / "tooling"
    _git(project, "init", "-q")
    _git(project, "config", "core.hooksPath", "../tooling/hooks")
    _git(project, "config", "include.path", str(tooling / "gitconfig"))
    tooling.mkdir()
    assert control.of_root(str(tooling), ("x",)) == ("x",)
    got = control.of_root(str(tooling), ("x",), [str(project), str(tooling)])
    assert set(got) == {"x", "hooks", "gitconfig"}


def test_a_bare_repository_root_adds_its_config(tmp_path):
    _git(tmp_path, "init", "-q", "--bare")
    assert "config" in control.of_root(str(tmp_path), ())


def test_git_is_asked_only_where_a_root_is_in_a_repository(tmp_path, monkeypatch):
    """A root in no repository never starts git; where git is not there
    nothing is added (nothing reads those files)."""
    bin_dir, plain, repo = tmp_path / "bin", tmp_path / "plain", tmp_path / "repo"
    _git(repo, "init", "-q")
    _git(repo, "config", "include.path", "../.gitconfig")
    bin_dir.mkdir()
    plain.mkdir()
    fake = bin_dir / "git"
    fake.write_text(f"#!/bin/sh\necho \"$PWD\" >> {tmp_path}/asked\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert control.of_root(str(plain), ("x",)) == ("x",)
    assert not (tmp_path / "asked").exists()
    assert control.of_root(str(repo), (".git",)) == (".git",)  # this git answers nothing
    assert (tmp_path / "asked").read_text() == f"{repo}\n"
    fake.unlink()
    assert control.of_root(str(repo), (".git",)) == (".git",)


@pytest.mark.parametrize("key,value,added", [
    ("core.fsmonitor", "tools/fsmonitor.sh", "tools/fsmonitor.sh"),
    ("core.fsmonitor", "./tools/fsmonitor.sh --watch", "tools/fsmonitor.sh"),
    ("alias.st", "!tools/st.sh -sb", "tools/st.sh"),
    ("diff.lock.textconv", "'scripts/lock diff'", "scripts/lock diff"),
    ("filter.lfs.clean", "bin/clean %f", "bin/clean"),
    ("core.sshCommand", "{root}/bin/ssh-wrap", "bin/ssh-wrap"),
    ("core.fsmonitor", "sh tools/fsmonitor.sh", "tools/fsmonitor.sh"),   # there: an existing script
    ("core.fsmonitor", "sh -c 'cd . && tools/w.sh'", "tools/w.sh"),      # a program: there or not
    ("alias.x", "!f() {{ ./bin/x \"$@\"; }}; f", "bin/x"),
    ("filter.x.clean", "sed -e s/a/b/", None),        # a word with a / that is no file
    ("filter.x.smudge", "tool --conf=./conf/x.ini", "conf/x.ini"),  # written as a path: held, there or not
    ("filter.x.smudge", "tool --conf=conf/y.ini", None),  # a bare word, not there: no file
    ("alias.st", "status -sb", None),                # a git command
    ("core.pager", "less -R", None),                 # a program on PATH
    ("core.fsmonitor", "true", None),                # a boolean
    ("core.editor", "/usr/bin/vi", None),            # outside the root
])
def test_a_program_a_setting_runs_by_a_path_in_the_root_is_added(tmp_path, key, value, added):
    """git runs these settings' values as commands from the work tree's top:
    the program one names by a path inside the root is held, as the file
    naming it is (`tools/fsmonitor.sh` exists: the team's committed script)."""
    _git(tmp_path, "init", "-q")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "fsmonitor.sh").write_text("#!/bin/sh\n")
    _git(tmp_path, "config", key, value.format(root=tmp_path))
    got = control.of_root(str(tmp_path), (".git",))
    assert got == ((".git", added) if added else (".git",))


@pytest.mark.parametrize("value,listed", [
    ('for f in */check.sh; do "$f"; done', "*/check.sh"),
    ("tool?/st.sh", "tool?/st.sh"),                        # toola/st.sh sorts first
    ("sh -c 'for f in *.sh; do sh $f; done'", "*.sh"),     # in a quoted command too
    ('"$(git rev-parse --show-toplevel)"/*/x.sh', None),  # the top, named by git
    ("git diff -- '*.c'", None),                           # quoted: git reads the pattern
    ('cd tools && for f in */check.sh; do "$f"; done', None),  # lists tools: held whole
    ("$HOME/bin/*", None),                                 # a folder not known here
    ("[ -x tools/st.sh ] && tools/st.sh", None),           # `[` is the test command
])
def test_a_setting_that_lists_the_top_is_unholdable(tmp_path, value, listed):
    """The top cannot be held: a pattern that lists it is said (the sandbox
    refuses a writable root there); one listing a folder below it is not."""
    _git(tmp_path, "init", "-q")
    (tmp_path / "tools").mkdir()
    _git(tmp_path, "config", "core.fsmonitor", value)
    got = gitconfigs.unholdable([str(tmp_path)])
    if listed is None and "rev-parse" not in value:
        assert got == []
    else:
        assert [(k, w) for k, _, _, w, _ in got] == [
            ("core.fsmonitor", f"its pattern {listed or value.replace(chr(34), '')} "
                               "matches what is made in")], got
        assert got[0][2] == f"{tmp_path}/.git/config" and got[0][4] == str(tmp_path)
    if "cd tools" in value:
        assert "tools" in control.of_root(str(tmp_path), (".git",))


def test_a_listed_top_outside_every_root_is_not_unholdable(tmp_path):
    """A root below the top: a pattern over the top lists the root's own
    folder too (`*/check.sh` matches root/check.sh), so it counts; another
    repository's top does not."""
    _git(tmp_path, "init", "-q")
    (tmp_path / "sub").mkdir()
    (tmp_path / "other").mkdir()
    _git(tmp_path, "config", "core.fsmonitor", "for f in */check.sh; do $f; done")
    assert gitconfigs.unholdable([str(tmp_path / "sub")])
    _git(tmp_path / "other", "init", "-q")
    assert gitconfigs.unholdable([str(tmp_path / "other")]) == []


@pytest.mark.parametrize("hooks_path", ["", ".githooks"])
def test_what_a_hook_runs_is_added(tmp_path, hooks_path):
    """A hook (`.git/hooks`, or the folder `core.hooksPath` names) runs a
    script of the tree: that script is held, as a setting's program is."""
    _git(tmp_path, "init", "-q")
    folder = tmp_path / (hooks_path or ".git/hooks")
    folder.mkdir(exist_ok=True)
    (folder / "pre-commit").write_text("#!/bin/sh\nexec tools/lint.sh \"$@\"\n")
    (folder / "pre-push.sample").write_text("#!/bin/sh\nexec tools/sample.sh\n")
    (tmp_path / "tools").mkdir()
    if hooks_path:
        _git(tmp_path, "config", "core.hooksPath", hooks_path)
    got = control.of_root(str(tmp_path), (".git",))
    assert "tools/lint.sh" in got and "tools/sample.sh" not in got, got
