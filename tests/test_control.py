"""`zapcli.control.of_root`: the names a root's own files add — the folder
`core.hooksPath` names, the file `.yarnrc.yml`'s `yarnPath` (`.yarnrc`'s
`yarn-path`) names, only when inside the root; read, never run."""

from __future__ import annotations

import subprocess

import pytest

from zapcli import control


@pytest.mark.parametrize("rc,text", [
    (".yarnrc.yml", "yarnPath: .yarn/releases/yarn-4.1.0.cjs\n"),
    (".yarnrc.yml", "nodeLinker: node-modules\nyarnPath: '.yarn/releases/yarn-4.1.0.cjs'  # pinned\n"),
    (".yarnrc.yml", 'yarnPath: "./.yarn/releases/yarn-4.1.0.cjs"\n'),
    (".yarnrc", 'yarn-path ".yarn/releases/yarn-4.1.0.cjs"\n'),
    (".yarnrc", "# yarn 1\nyarn-path ./.yarn/releases/yarn-4.1.0.cjs\n"),
])
def test_the_yarn_a_yarnrc_names_is_added(tmp_path, rc, text):
    (tmp_path / rc).write_text(text)
    assert control.of_root(str(tmp_path), ("x",)) == ("x", ".yarn/releases/yarn-4.1.0.cjs")


def test_an_absolute_yarn_path_inside_the_root_is_added(tmp_path):
    (tmp_path / ".yarnrc.yml").write_text(f"yarnPath: {tmp_path}/tools/yarn.cjs\n")
    assert control.of_root(str(tmp_path), ()) == ("tools/yarn.cjs",)


@pytest.mark.parametrize("text", ["yarnPath: /usr/lib/yarn.cjs\n", "yarnPath: ../yarn.cjs\n",
                                  "  yarnPath: nested.cjs\n", "yarnPath:\n", "plugins: []\n"])
def test_a_yarn_path_outside_the_root_or_not_one_adds_nothing(tmp_path, text):
    (tmp_path / ".yarnrc.yml").write_text(text)
    assert control.of_root(str(tmp_path), ("x",)) == ("x",)


def test_hooks_path_and_yarn_path_both(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.hooksPath", ".githooks"], check=True)
    (tmp_path / ".yarnrc").write_text("yarn-path tools/yarn.js\n")
    assert set(control.of_root(str(tmp_path), ())) == {".githooks", "tools/yarn.js"}


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
