"""A git config file the repository's config includes from its work tree
(adversary round 4, on `zapcli.control` / `zapcli.control._hooks_path`;
closed: `zapcli.control.of_root` now asks git for every file it reads as the
repository's configuration, and for `core.hooksPath`).

`.git` is held, so agent work never edits `.git/config`. But a repository's
config may include another file — `git config include.path ../.gitconfig`
is how many projects share aliases, diff drivers and `core.hooksPath`
through a tracked file at the top. git reads that file as its own config:
`core.fsmonitor`, `core.pager`, `core.sshCommand`, `alias.*` with `!`,
`diff.external`, `core.hooksPath`, ... all run commands. It is not held
(no control name; `of_root` reads `.git/config` for `core.hooksPath` but not
what it includes), so a sandboxed subagent appends `core.fsmonitor` there
and the person's next `git status` in the checkout runs it — as the person,
outside every sandbox. (zapcli's own git follows includes and turns such
settings off: `zapcli.worktrees.drivers`; the person's git does not.)

The same for `core.hooksPath` set relative in the person's global config
(`.githooks`: git resolves it in each work tree), which `_hooks_path` does
not read either: `.githooks/pre-commit` runs at their next commit.

The outside effect: the file the planted `core.fsmonitor` (hook) writes in
`outside` at the person's `git status` (`git commit`).
"""

from __future__ import annotations

import subprocess

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import agent, make_repo
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


@pytest.mark.parametrize("included", [".gitconfig", "tools/git/config"])
def test_an_included_git_config_cannot_be_made_to_run_code(zap, outside, included):
    repo = make_repo(zap.cwd)
    (repo / included).parent.mkdir(parents=True, exist_ok=True)
    (repo / included).write_text("[alias]\n\tst = status -sb\n")
    git(repo, "add", included)
    git(repo, "commit", "-q", "-m", "shared git config")
    git(repo, "config", "include.path", f"../{included}")
    agent(zap, f"printf '[core]\\n\\tfsmonitor = \"id > {outside}/PWNED-include; false\"\\n' "
               f">> {included}")
    assert not list(outside.iterdir())  # nothing ran inside
    # the person's next git status in their checkout
    subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True, timeout=30)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran


def test_a_relative_global_hookspath_folder_is_held(zap, outside, tmp_path):
    """The person's `git config --global core.hooksPath .githooks` (a team's
    convention, set once for every checkout): git resolves it in each work
    tree, so `.githooks/pre-commit` of this checkout runs at their next
    commit. `_hooks_path` parsed `.git/config` alone."""
    glob = tmp_path / "gitconfig-global"
    glob.write_text("[core]\n\thooksPath = .githooks\n[user]\n\tname = u\n\temail = u@u\n")
    zap.env["GIT_CONFIG_GLOBAL"] = str(glob)
    repo = make_repo(zap.cwd)
    agent(zap, f"mkdir -p .githooks && printf '#!/bin/sh\\nid > {outside}/PWNED-hook\\n' "
               "> .githooks/pre-commit && chmod +x .githooks/pre-commit")
    assert not list(outside.iterdir())
    (repo / "x.txt").write_text("x\n")
    env = {**zap.env, "GIT_CONFIG_GLOBAL": str(glob)}
    subprocess.run(["git", "add", "x.txt"], cwd=repo, env=env, capture_output=True, timeout=30)
    subprocess.run(["git", "commit", "-qm", "x"], cwd=repo, env=env, capture_output=True, timeout=30)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran


@pytest.mark.parametrize("key,value,run", [
    ("core.fsmonitor", "tools/fsmonitor.sh", ["status", "--short"]),
    ("core.fsmonitor", "./tools/fsmonitor.sh", ["status", "--short"]),
    ("alias.st", "!tools/fsmonitor.sh", ["st"]),
    ("core.pager", "tools/fsmonitor.sh --color", ["-c", "pager.log=true", "log", "-1"]),
    # the program not the first word: an interpreter, a shell's -c, an alias's function
    ("core.fsmonitor", "sh tools/fsmonitor.sh", ["status", "--short"]),
    ("core.fsmonitor", "sh -c 'exec tools/fsmonitor.sh'", ["status", "--short"]),
    ("alias.st", "!f() { tools/fsmonitor.sh; }; f", ["st"]),
    ("alias.st", "!cd . && ./tools/fsmonitor.sh", ["st"]),
])
def test_a_script_the_persons_git_config_names_in_the_work_tree_is_held(zap, outside, key, value, run):
    """The person's own config names a program in the work tree — a
    committed fsmonitor script (`core.fsmonitor = tools/fsmonitor.sh`), an
    alias `!tools/x.sh`, a pager: git runs it from the work tree's top at
    their next `git status`, `git st`, `git log`. The config file is held;
    the script it names was not, so sandboxed work rewrote it."""
    repo = make_repo(zap.cwd)
    script = repo / "tools" / "fsmonitor.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#!/bin/sh\ncat\n" if "pager" in key else "#!/bin/sh\nexit 1\n")
    script.chmod(0o755)
    git(repo, "add", "tools/fsmonitor.sh")
    git(repo, "commit", "-q", "-m", "the team's script")
    git(repo, "config", key, value)
    agent(zap, f"printf '#!/bin/sh\\nid > {outside}/PWNED-script\\ncat\\n' > tools/fsmonitor.sh || true")
    assert not list(outside.iterdir())  # nothing ran inside
    env = {k: v for k, v in zap.env.items() if k != "GIT_PAGER"}
    subprocess.run(["git", *run], cwd=repo, env={**env, "PAGER": "cat"}, capture_output=True,
                   timeout=30, stdin=subprocess.DEVNULL)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran
