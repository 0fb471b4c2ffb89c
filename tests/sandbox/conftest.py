"""A real sandbox (bubblewrap) over a temporary workspace, for the tools;
skipped, saying why, where this machine cannot run bwrap (`make test`
installs bubblewrap)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from zapcli import plain
from zapcli.agent.types import ToolContext
from zapcli.sandbox import bwrap
from zapcli.sandbox.policy import resolve
from zapcli.sandbox.session import Sandbox
from zapcli.tools.env import scrubbed_env
from zapcli.tools.procs import JobRegistry

FOUND = bwrap.probe()


def boxed(policy: Any, command: list[str], **kw: Any) -> subprocess.CompletedProcess:
    """`command` run in bubblewrap under `policy` as zapcli's runners start
    it (`bwrap.Starts`): each start takes a fresh look at this host's sockets,
    and one whose set-up failed on a socket it was to cover, gone since that
    look (another test's, in a shared temp folder), is started once more.
    `kw` as `subprocess.run`'s; stderr is captured."""
    starts = bwrap.Starts(lambda: bwrap.argv(policy, FOUND.program))
    if not kw.get("capture_output"):
        kw.setdefault("stderr", subprocess.PIPE)
    while True:
        done = subprocess.run([*starts(), *command], **kw)
        said = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        if done.returncode == 0 or not starts.again(said):
            return done
needs_bwrap = pytest.mark.skipif(not FOUND.ok, reason=f"no sandbox here: {FOUND.sentence()}")


class Box:
    """A workspace, zapcli-like state and config folders, a sandbox over them."""

    def __init__(self, tmp: Path, mode: str = "workspace", network: bool = False,
                 writable: list[str] | None = None, **extra: Any):
        self.tmp = tmp
        self.ws = tmp / "ws"
        self.state = tmp / "state"
        self.scratch = self.state / "subagents" / "sa_x.tmp"
        for d in (self.ws / ".git", self.scratch, tmp / "config", tmp / "outside"):
            d.mkdir(parents=True, exist_ok=True)
        (self.state / "mcp").mkdir(exist_ok=True)
        (self.state / "mcp" / "http-1.token").write_text("secret-token\n")
        self.policy, self.notes = resolve(mode, workspace=str(self.ws), network=network,
                                          writable=writable, scratch=str(self.scratch),
                                          hidden=(str(self.state), str(tmp / "config")))
        self.policy = plain.replace(self.policy, **extra)  # scratch_size, sockets
        self.sandbox = Sandbox(self.policy, FOUND.program)
        self.jobs = JobRegistry()
        self.ctx = ToolContext(workspace=str(self.ws), cwd=str(self.ws),
                               env=scrubbed_env(os.environ), sandbox=self.sandbox)

    def close(self) -> None:
        self.jobs.close()
        self.sandbox.close()


@pytest.fixture
def box(tmp_path):
    made: list[Box] = []

    def make(**kw) -> Box:
        b = Box(tmp_path / f"b{len(made)}", **kw)
        made.append(b)
        return b

    yield make
    for b in made:
        b.close()
