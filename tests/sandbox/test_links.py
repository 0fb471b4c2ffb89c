"""Links on the sandbox's paths never abort it with bwrap's own error: a
state folder reached through a link (Fedora Silverblue's /home -> var/home,
a ZAPCLI_HOME symlinked elsewhere) sets up as any other, and a control name
that is a link is refused in words (tests/redteam covers what an agent could
do through one)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.agent.types import ToolContext
from zapcli.sandbox.links import problems
from zapcli.sandbox.policy import resolve
from zapcli.sandbox.session import Sandbox
from zapcli.tools.env import scrubbed_env
from zapcli.tools.procs import JobRegistry
from zapcli.tools.shell import BashTool


@needs_bwrap
def test_a_scratch_folder_reached_through_a_link_sets_up(tmp_path):
    ws, state = tmp_path / "ws", tmp_path / "real-state"
    (state / "subagents" / "sa_x.tmp").mkdir(parents=True)
    ws.mkdir()
    os.symlink(state, tmp_path / "state")
    scratch = tmp_path / "state" / "subagents" / "sa_x.tmp"
    policy, _ = resolve("workspace", workspace=str(ws), scratch=str(scratch),
                        hidden=[str(tmp_path / "state")])
    box, jobs = Sandbox(policy, FOUND.program), JobRegistry()
    try:
        ctx = ToolContext(workspace=str(ws), cwd=str(ws), env=scrubbed_env(os.environ), sandbox=box)
        res = BashTool(jobs).run({"command": "echo kept > $TMPDIR/f && cat $TMPDIR/f"}, ctx)
        assert res.ok and "kept" in res.content, res.content
    finally:
        jobs.close()
        box.close()


def test_control_names_that_are_links_are_named(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "realgit").mkdir(parents=True)
    (ws / ".git").symlink_to("realgit")
    (ws / ".vscode").symlink_to(tmp_path)
    (ws / ".zapcli").mkdir()
    said = problems([str(ws)], [".git", ".zapcli", ".vscode/tasks.json", ".envrc"])
    assert len(said) == 2, said
    assert said[0].startswith(f"the sandbox cannot keep {ws}/.git read-only: it is a symbolic "
                              "link (to realgit)")
    assert f"{ws}/.vscode" in said[1] and "--approval full" in said[1]
