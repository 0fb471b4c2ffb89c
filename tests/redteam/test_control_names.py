"""Control files under names the one list (zapcli/control.py) did not hold
(adversary round on issue 27's boundary): an agent's sandboxed command or
file tool (workspace mode) wrote them at the top of the workspace; another
program then runs what they say, as the user, outside every sandbox.

- the repository's own `core.hooksPath` folder (`.githooks/` is a common
  convention; only husky's `.husky` was listed): the user's next
  `git commit` runs the hook. Held now whatever folder git's config names;
- `lefthook.yml` / `.lefthook.yml`, `.overcommit.yml` (hooks read at every
  commit, as the listed `.pre-commit-config.yaml`);
- `.devcontainer.json` at the root (`initializeCommand` runs on the host);
- `.vscode/mcp.json` (servers VS Code starts) — also when `.vscode/` exists;
- `.cursor/mcp.json`, `opencode.jsonc`;
- package managers' and toolchain managers' project settings, read by the
  user's next ordinary command in the folder: `.npmrc` (`node-options`,
  `script-shell`: the next `npm run`), `.yarnrc` / `.yarnrc.yml`
  (`yarn-path` / `yarnPath`: the next `yarn` runs that file), `.pnpmfile.cjs`
  (hooks at `pnpm install`), `bunfig.toml` (`preload`), `.cargo/` (a
  `config.toml`'s `build.rustc-wrapper`, `runner`: the next `cargo build`),
  `rust-toolchain.toml` / `rust-toolchain` (`path`: rustup's proxy runs
  that folder's `cargo`), mise's other project files (`mise.local.toml`,
  `.mise/`, `.config/mise/`, ...) and `.tool-versions` (a `path:` version:
  mise's and asdf's shims run a binary there).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import wait_until
from tests.redteam.actors import Actor
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap


def _git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def _hooks_repo(w, folder: str = ".githooks"):
    assert _git(w, "init", "-q").returncode == 0
    (w / folder).mkdir(parents=True)
    (w / folder / "README").write_text("team hooks\n")
    (w / "a.txt").write_text("a\n")
    _git(w, "config", "core.hooksPath", folder)
    _git(w, "add", "-A")
    _git(w, "commit", "-qm", "one")


def _the_users_next_commit(w) -> None:
    (w / "a.txt").write_text("b\n")
    _git(w, "commit", "-qam", "two")


@pytest.mark.parametrize("folder", [".githooks", "tools/git-hooks"])
def test_a_sandboxed_command_cannot_plant_a_hook_in_the_hookspath_folder(zap, outside, folder):
    actor = Actor.root(zap)
    w = actor.work
    _hooks_repo(w, folder)
    cmd = (f"printf '#!/bin/sh\\nid > {outside}/HOOK\\n' > {folder}/pre-commit && "
           f"chmod +x {folder}/pre-commit && echo planted")
    actor.wait(actor.spawn("--cli", "sh", "--sandbox", "--", cmd))
    _the_users_next_commit(w)
    assert not (outside / "HOOK").exists(), "the user's git commit ran the agent's hook"


def test_the_write_tool_cannot_plant_a_hook_in_the_hookspath_folder(zap, outside):
    """An injected model in workspace mode, unattended (every question
    denied), with the `write` tool: the folder does not exist yet either."""
    actor = Actor.root(zap)
    w = actor.work
    assert _git(w, "init", "-q").returncode == 0
    (w / "a.txt").write_text("a\n")
    _git(w, "config", "core.hooksPath", ".githooks")
    _git(w, "add", "-A")
    _git(w, "commit", "-qm", "one")
    actor.agent_writes(".githooks/post-commit", f"#!/bin/sh\nid > {outside}/HOOK\n")
    hook = w / ".githooks" / "post-commit"
    if hook.exists():  # git runs only an executable hook: make it one, as a person might
        hook.chmod(0o755)
    _the_users_next_commit(w)
    assert not (outside / "HOOK").exists(), "the user's git commit ran the agent's hook"


TOOLCHAINS = [".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", ".pnpmfile.mjs", "bunfig.toml",
              ".cargo/config.toml", ".cargo/config", "rust-toolchain.toml", "rust-toolchain",
              "mise.local.toml", ".mise.local.toml", ".mise/config.toml", "mise/config.toml",
              ".config/mise.toml", ".config/mise.local.toml", ".config/mise/config.toml",
              ".config/mise/conf.d/x.toml", ".tool-versions", ".env", ".pdbrc", ".mvn/jvm.config",
              ".mvn/maven.config", ".mvn/extensions.xml", ".mvn/wrapper/maven-wrapper.properties",
              "gradle.properties", ".python-version"]


@pytest.mark.parametrize("name", ["lefthook.yml", ".lefthook.yml", ".devcontainer.json",
                                  ".vscode/mcp.json", "opencode.jsonc", ".cursor/mcp.json",
                                  ".overcommit.yml", *TOOLCHAINS])
def test_other_control_names_are_held(zap, name):
    """Each of these runs commands for another program as the user."""
    actor = Actor.root(zap)
    w = actor.work
    _git(w, "init", "-q")
    d = os.path.dirname(name)
    cmd = (f"mkdir -p {d} && " if d else "") + f"echo '{{}}' > {name} && echo planted"
    sid = actor.spawn("--cli", "sh", "--sandbox", "--", cmd)
    actor.wait(sid)
    assert not (w / name).exists(), f"{name} was planted: {actor('output', sid).out}"


def test_vscode_mcp_json_is_held_when_vscode_exists(zap):
    """`.vscode/` itself is held only while missing; with an existing one (the
    usual case) each listed file in it is."""
    actor = Actor.root(zap)
    (actor.work / ".vscode").mkdir()
    (actor.work / ".vscode" / "extensions.json").write_text("{}\n")
    sid = actor.spawn("--cli", "sh", "--sandbox", "--",
                      "echo '{\"servers\":{\"x\":{\"command\":\"sh\"}}}' > .vscode/mcp.json && echo planted")
    actor.wait(sid)
    assert not (actor.work / ".vscode" / "mcp.json").exists(), actor("output", sid).out


def _plant_and_run(actor: Actor, cmd: str) -> str:
    """A sandboxed `sh` subagent runs `cmd` in the workspace; its output."""
    sid = actor.spawn("--cli", "sh", "--sandbox", "--", cmd)
    actor.wait(sid)
    return actor("output", sid).out


@pytest.mark.parametrize("setting", ["node-options=--require {w}/x.js", "script-shell={w}/x.sh"])
def test_a_planted_npmrc_runs_nothing_at_the_users_next_npm_run(zap, outside, setting):
    """`.npmrc` beside `package.json`: npm hands `node-options` to every
    script's node as NODE_OPTIONS, and runs every script with
    `script-shell`."""
    actor = Actor.root(zap)
    w = actor.work
    (w / "package.json").write_text('{"name": "p", "version": "1.0.0", '
                                     '"scripts": {"hello": "node -e 0"}}\n')
    said = _plant_and_run(actor, (
        f"printf \"require('fs').writeFileSync('{outside}/NPM', 'ran')\\n\" > x.js && "
        f"printf '#!/bin/sh\\nid > {outside}/NPM\\n' > x.sh && chmod +x x.sh && "
        f"echo '{setting.format(w=w)}' > .npmrc && echo planted"))
    npm = actor.run(["env", "NPM_CONFIG_UPDATE_NOTIFIER=false", "npm", "run", "hello"])
    assert not (outside / "NPM").exists(), f"the user's npm run ran the agent's code: {said}{npm.stderr}"


CARGO = shutil.which("cargo")
needs_cargo = pytest.mark.skipif(CARGO is None, reason="needs cargo")


def _crate(w) -> None:
    (w / "src").mkdir()
    (w / "src" / "main.rs").write_text("fn main() {}\n")
    (w / "Cargo.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\nedition = "2021"\n')


@needs_cargo
@pytest.mark.parametrize("held", ["missing", "exists"])
def test_a_planted_cargo_config_runs_nothing_at_the_users_next_cargo_build(zap, outside, held):
    """`.cargo/config.toml`'s `build.rustc-wrapper` runs at the next `cargo
    build`; the project's `.cargo/` may not exist yet or hold a config."""
    actor = Actor.root(zap)
    w = actor.work
    _crate(w)
    if held == "exists":
        (w / ".cargo").mkdir()
        (w / ".cargo" / "config.toml").write_text("[build]\njobs = 1\n")
    said = _plant_and_run(actor, (
        f"printf '#!/bin/sh\\nid > {outside}/CARGO\\nexec \"$@\"\\n' > wrap.sh && chmod +x wrap.sh && "
        f"mkdir -p .cargo && printf '[build]\\nrustc-wrapper = \"{w}/wrap.sh\"\\n' > .cargo/config.toml"
        " && echo planted"))
    build = actor.run(["env", f"CARGO_TARGET_DIR={w.parent / 'target'}",
                       "cargo", "build", "--offline", "-q"])
    assert build.returncode == 0, build.stderr
    assert not (outside / "CARGO").exists(), f"the user's cargo build ran the agent's wrapper: {said}"


@needs_cargo
@pytest.mark.parametrize("name", ["rust-toolchain.toml", "rust-toolchain"])
def test_a_planted_rust_toolchain_runs_nothing_at_the_users_next_cargo(zap, outside, name):
    """rustup's proxy (`cargo` is rustup) runs the `cargo` of the toolchain
    a `rust-toolchain.toml`'s `path` names; the user's `cargo --version`
    works as before, during a run too (the placeholder configures nothing)."""
    actor = Actor.root(zap)
    w = actor.work
    _crate(w)
    sid = actor.spawn("--cli", "sh", "--sandbox", "--", (
        f"mkdir -p tc/bin && printf '#!/bin/sh\\nid > {outside}/RUSTUP\\n' > tc/bin/cargo && "
        f"chmod +x tc/bin/cargo && printf '[toolchain]\\npath = \"{w}/tc\"\\n' > {name}; "
        "echo planted; sleep 30"))
    wait_until(lambda: "planted" in actor("output", sid).out, 30)
    during = actor.run(["cargo", "--version"])
    actor("kill", sid)
    actor.wait(sid)
    after = actor.run(["cargo", "--version"])
    assert not (outside / "RUSTUP").exists(), "the user's cargo ran the agent's toolchain"
    assert during.returncode == 0 and after.returncode == 0, during.stderr + after.stderr
