"""`worktree.setup` runs as the person on a tree made from a repository an
agent made (adversary round 4, on `zapcli.runner.tree._setup` /
`zapcli.backends.sandboxed.tree_box`).

Today's fix runs a tree's teardown, and the setup of a tree made again from
a continued subagent's branch, in the sandbox that work had: their files
are agent work. A NEW tree's setup still runs unsandboxed, as the person,
with the person's environment — "before any agent work". But a new tree
holds the HEAD of whatever repository git finds around the spawn's folder,
and a sandboxed subagent may make one below its workspace (only the top's
`.git` is held): `sub/` made a repository whose one commit is a Makefile.

The person's next `zapcli spawn --worktree` from `sub/` (or a `zapcli run`
there whose model asks for `worktree: true`) makes a tree from that commit
and runs their `worktree.setup: make -s setup` on the agent's Makefile,
unsandboxed. The same for `npm ci` (package.json's scripts), `uv sync`
(a build backend), ...

The outside effect: the file the agent's `setup` target writes in `outside`.

Status against main at 67476c1: SUCCEEDED (`PWNED-setup` written). Now a
new tree's setup runs sandboxed (the tree writable, keyless, control files
held) when its repository lies below a folder agent work was given to write
in (`zapcli.agentroots.repo_worked`), and not at all where no sandbox can be
had; the person's own checkout's setup runs as the person, as before.
"""

from __future__ import annotations

import pytest

from tests.redteam.repos import COMMIT, agent, new_tree, repo_with_setup
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]


def test_setup_runs_sandboxed_on_a_repository_an_agent_made(zap, outside):
    repo = repo_with_setup(zap)
    # the injection: a sandboxed subagent in the person's checkout
    agent(zap, "mkdir -p sub && cd sub && git init -q && "
               f"printf 'setup:\\n\\t@id > {outside}/PWNED-setup\\n' > Makefile && "
               f"git add Makefile && {COMMIT} base")
    assert not list(outside.iterdir())  # the sandbox held it while it ran
    # later: the person starts a --worktree subagent from sub/
    zap.cwd = repo / "sub"
    ran = new_tree(zap, outside)
    assert ran == [], ran
