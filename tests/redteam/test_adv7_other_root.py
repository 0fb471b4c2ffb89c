"""A file one writable root's git reads as configuration, lying in ANOTHER
writable root (adversary round 7, on `zapcli.control.of_root` and
`zapcli.sandbox.policy`).

`of_root(root)` asks git what the repository `root` is in reads (config
files, includes, `core.hooksPath`, the programs its settings run) and keeps
what lies inside `root` itself. A file of a repository's configuration that
lies in another writable root is held by neither: the other root's own
repository does not read it. A team keeps its shared git hooks and config in
a tooling checkout beside each project (`core.hooksPath =
../tooling/hooks`, `include.path = ../tooling/gitconfig`); the person
gives a subagent both folders to write in (a change across the two). The
sandboxed work rewrites the hook, or adds `core.fsmonitor` to the included
file, and the person's next `git commit` / `git status` in the project runs
it — as the person, outside every sandbox.

The outside effect: the file the planted hook or setting writes in
`outside`.

Status against ba8dc3b: SUCCEEDED (both). Fixed (h-adv): `of_root` takes
the work's other writable roots, and holds what each one's repository
reads where it lies in this root (the sandbox and the file tools alike).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import agent, make_repo, setup_config
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


def _tooling(tmp_path: Path) -> Path:
    """The team's tooling checkout beside the project: a pre-commit hook and a shared config."""
    tooling = tmp_path / "tooling"
    (tooling / "hooks").mkdir(parents=True)
    (tooling / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (tooling / "hooks" / "pre-commit").chmod(0o755)
    (tooling / "gitconfig").write_text("[alias]\n\tst = status -sb\n")
    make_repo(tooling)
    git(tooling, "add", "-A")
    git(tooling, "commit", "-q", "-m", "hooks")
    return tooling


@pytest.mark.parametrize("route", ["hooksPath", "include"])
def test_a_config_file_of_one_root_in_another_root_is_held(zap, outside, tmp_path, route):
    repo = make_repo(zap.cwd)
    tooling = _tooling(tmp_path)
    if route == "hooksPath":
        git(repo, "config", "core.hooksPath", str(tooling / "hooks"))
        plant = f"printf '#!/bin/sh\\nid > {outside}/PWNED-hook\\n' > {tooling}/hooks/pre-commit"
    else:
        git(repo, "config", "include.path", str(tooling / "gitconfig"))
        plant = (f"printf '[core]\\n\\tfsmonitor = \"id > {outside}/PWNED-include; false\"\\n' "
                 f">> {tooling}/gitconfig")
    setup_config(zap, f"writable_roots: [{tooling}]\n")
    agent(zap, f"{plant} || true")
    assert not list(outside.iterdir())  # nothing ran inside
    # the person's next git status and commit in the project
    (repo / "x.txt").write_text("x\n")
    for argv in (["status", "--short"], ["add", "x.txt"], ["commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=repo, capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], ran
