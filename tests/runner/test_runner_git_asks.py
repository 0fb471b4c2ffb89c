"""What a sandboxed runner asks git (#32: the cost of a subagent a model
spawns): the policy asks which files configure the repository the workspace
is in, for its writable roots and again for what they hold, and git's
answer is the same both times: it is asked once. Counts the `git config
--list` processes through a `git` first on PATH that notes its arguments
and runs the real one."""

from __future__ import annotations

import shutil
import subprocess

from tests.sandbox.conftest import needs_bwrap


@needs_bwrap
def test_a_sandboxed_runner_asks_git_for_the_repositorys_configuration_once(zap, tmp_path):
    subprocess.run(["git", "init", "-q", str(zap.cwd)], check=True)
    shim, log = tmp_path / "shim", tmp_path / "git-asked"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {shutil.which("git")} "$@"\n')
    (shim / "git").chmod(0o755)
    path = f"{shim}:{zap.env['PATH']}"
    proc = zap("spawn", "--cli", "sh", "--sandbox", "--", "echo done", env={"PATH": path})
    sid = proc.out.strip()
    assert sid.startswith("sa_"), proc.err
    assert zap.wait_status(sid) == "completed"
    asked = [line for line in log.read_text().splitlines() if "config" in line and "--list" in line]
    assert len(asked) == 1, asked
    assert (zap.home / "subagents" / f"{sid}.out").read_text() == "done\n"
