"""The person's EXISTING repository below a workspace's top: its `.git` is
writable to sandboxed commands (adversary round 7, on
`zapcli.sandbox.policy._guard`).

The sandbox binds a writable root's control names read-only relative to
the root alone (`.git`, `.envrc`, `.vscode/tasks.json` at its top); the
file tools and the merge check match them at any depth. The security model
says commands "can still create them deeper (`sub/.envrc`)"; but what
already exists deeper is not held either: a workspace that holds another
of the person's repositories — a plain folder of checkouts (`~/src`, work
across repos), or a repository with an ignored clone inside
(`third_party/lib`) — leaves that repository's `.git/hooks` and
`.git/config` writable, and the person's next `git commit` there runs what
the work planted, as the person, outside every sandbox. The same for any
control file that exists in a subfolder (`a/.vscode/tasks.json`).

The outside effect: the file the planted hook or `core.fsmonitor` writes in
`outside` at the person's commit in the nested repository; the existing
`a/.vscode/tasks.json` changed.

Status against ba8dc3b: SUCCEEDED (all six). Fixed: the sandbox holds each
control name that exists below the top too, and what a nested repository's
config names (`zapcli.sandbox.deeper`: a walk of each writable root at the
sandbox's start, pruned at held names, links and bulky folders, bounded
with a note).
"""

from __future__ import annotations

import subprocess

import pytest

from tests.redteam.repos import agent, make_repo
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


@pytest.mark.parametrize("outer", ["plain-folder", "repository"])
@pytest.mark.parametrize("plant", ["hook", "config", "vscode"])
def test_an_existing_nested_repository_and_control_file_are_held(zap, outside, plant, outer):
    if outer == "repository":
        make_repo(zap.cwd)
        (zap.cwd / ".gitignore").write_text("a/\n")
    inner = zap.cwd / "a"  # the person's other repository, inside the workspace
    inner.mkdir()
    make_repo(inner)
    (inner / ".vscode").mkdir()
    (inner / ".vscode" / "tasks.json").write_text("{}\n")
    script = {
        "hook": (f"mkdir -p a/.git/hooks && printf '#!/bin/sh\\nid > {outside}/PWNED\\n' "
                 "> a/.git/hooks/pre-commit && chmod +x a/.git/hooks/pre-commit"),
        "config": (f"printf '[core]\\n\\tfsmonitor = \"id > {outside}/PWNED; false\"\\n' "
                   ">> a/.git/config"),
        "vscode": ("printf '{\"tasks\": [{\"label\": \"x\", \"command\": \"id\", "
                   "\"runOptions\": {\"runOn\": \"folderOpen\"}}]}' > a/.vscode/tasks.json"),
    }[plant]
    agent(zap, f"{script} || true")
    (inner / "x").write_text("x")
    for argv in (["status"], ["add", "x"], ["commit", "-qm", "x"]):  # the person, in `a`
        subprocess.run(["git", *argv], cwd=inner, capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert sorted(p.name for p in outside.iterdir()) == []
    assert (inner / ".vscode" / "tasks.json").read_text() == "{}\n"


def _person_commits(inner) -> None:
    (inner / "y").write_text("y")
    for argv in (["status"], ["add", "y"], ["commit", "-qm", "y"]):
        subprocess.run(["git", *argv], cwd=inner, capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)


def _hook(outside) -> str:
    return f"#!/bin/sh\\nid > {outside}/PWNED\\n"


# where the person's other repository is, and where the work plants the hook its commit runs
NESTED = {
    # `git init --separate-git-dir`: a/.git is a FILE naming the git dir, here in the workspace
    "git file": ("a", lambda ws: subprocess.run(
        ["git", "init", "-q", "--separate-git-dir", str(ws / "store"), str(ws / "a")],
        check=True), "store/hooks/pre-commit"),
    # the nested repository's own core.hooksPath, a folder it tracks
    "hooksPath": ("a", lambda ws: (make_repo(ws / "a"), (ws / "a/tools/hooks").mkdir(parents=True),
                                   subprocess.run(["git", "-C", str(ws / "a"), "config",
                                                   "core.hooksPath", "tools/hooks"], check=True)),
                  "a/tools/hooks/pre-commit"),
    # a checkout whose name is a bulky folder's: walked all the same
    "named target": ("target", lambda ws: make_repo(ws / "target"), "target/.git/hooks/pre-commit"),
    "three deep": ("x/y/a", lambda ws: make_repo(ws / "x/y/a"), "x/y/a/.git/hooks/pre-commit"),
}


@pytest.mark.parametrize("how", list(NESTED))
def test_what_a_nested_repository_runs_is_held(zap, outside, how):
    where, made, plant = NESTED[how]
    make_repo(zap.cwd)
    (zap.cwd / ".gitignore").write_text(f"{where.split('/')[0]}/\nstore/\n")
    (zap.cwd / where).mkdir(parents=True, exist_ok=True)
    made(zap.cwd)
    agent(zap, f"mkdir -p $(dirname {plant}); printf '{_hook(outside)}' > {plant}; "
               f"chmod +x {plant} || true")
    _person_commits(zap.cwd / where)
    assert sorted(p.name for p in outside.iterdir()) == []


@pytest.mark.parametrize("how", ["git file", "hooksPath"])
def test_the_write_tool_cannot_plant_what_a_nested_repository_runs(zap, outside, how):
    """The built-in agent's `write` (it writes from the runner, not through
    the sandbox), unattended in workspace mode: every question denied."""
    from tests.redteam.actors import Actor

    where, made, plant = NESTED[how]
    actor = Actor.root(zap)
    make_repo(actor.work)
    (actor.work / ".gitignore").write_text("a/\nstore/\n")
    (actor.work / where).mkdir(parents=True, exist_ok=True)
    made(actor.work)
    actor.agent_writes(plant, f"#!/bin/sh\nid > {outside}/PWNED\n")
    hook = actor.work / plant
    if hook.exists():  # git runs only an executable hook: make it one, as a person might
        hook.chmod(0o755)
    _person_commits(actor.work / where)
    assert sorted(p.name for p in outside.iterdir()) == []
