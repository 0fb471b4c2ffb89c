"""zapcli's git never reaches a remote, whatever a repository's config says.

A sandboxed subagent may make a repository below its workspace (`git init
sub`) and write its config: a partial clone whose promisor remote is an
`ext::` command, `protocol.ext.allow=always` (a per-protocol key git reads
before zapcli's `protocol.allow=never`), and a branch naming a commit that
is not there. The person's later `zapcli spawn --worktree` from `sub/` ran
git on it, git fetched the missing commit from the "remote", and the
`ext::` transport ran the agent's command, unsandboxed (an adversary's
review). The same through a local path and `remote.origin.uploadpack`.
zapcli's git now runs with no transport allowed (GIT_ALLOW_PROTOCOL, which
no config file overrides) and no lazy fetch. The outside effect: a file the
agent's command writes when it runs. Real git, real bubblewrap.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.redteam.repos import agent, make_repo
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(240)]

MISSING = "1111111111111111111111111111111111111111"


@pytest.mark.parametrize("remote", ["ext", "uploadpack"])
def test_a_nested_repositorys_remote_never_runs_from_zapclis_git(zap, outside, remote):
    make_repo(zap.cwd)
    config = ["git config core.repositoryformatversion 1",
              "git config extensions.partialClone origin",
              "git config remote.origin.promisor true"]
    if remote == "ext":
        config += ["git config protocol.ext.allow always",
                   f"git config remote.origin.url 'ext::sh -c id% >{outside}/ext% 2>&1% ;false'"]
    else:
        config += ["git config protocol.file.allow always", "git config remote.origin.url .",
                   f"git config remote.origin.uploadpack 'sh -c \"id > {outside}/uploadpack\"; false'"]
    agent(zap, "mkdir sub && cd sub && git init -q && " + " && ".join(config)
          + f" && echo {MISSING} > .git/refs/heads/master")
    sub = zap.cwd / "sub"
    ran = [subprocess.run([sys.executable, "-m", "zapcli", *args], cwd=sub, env=zap.env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
           for args in (["spawn", "--worktree", "--cli", "sh", "--", "true"], ["doctor"])]
    assert sorted(p.name for p in outside.iterdir()) == [], [r.stderr[-300:] for r in ran]
