"""Work still gets done with an agent CLI inside the sandbox (issue 27 item
10): a repository under the user's home (out of view) and a `--worktree`
claude subagent that commits there — its git finds the repository's common
folder (shown read-only, the branch's own parts writable) and signs with the
user's name from their own ~/.gitconfig (itself out of view)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.backends import clitest as ct
from tests.conftest import Zap
from tests.sandbox.conftest import needs_bwrap
from zapcli.testing import ScriptedServer

COMMIT = ("echo change >> notes.txt && git commit -qam 'by the agent' && "
          "git log -1 --format='AUTHOR=%an <%ae>' && cat ~/.gitconfig 2>&1 | head -3; "
          "echo DONE-GIT")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@needs_bwrap
def test_a_worktree_claude_commits_to_a_repository_in_the_hidden_home(zap: Zap,
                                                                       tmp_path: Path) -> None:
    home = tmp_path / "user-home"
    repo = home / "src" / "proj"
    repo.mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Ada Person\n\temail = ada@example.com\n"
                                     "[credential]\n\thelper = store-SECRET-HELPER\n")
    env = {"HOME": str(home)}
    for args in (("init", "-q", "-b", "main"), ("config", "commit.gpgsign", "false")):
        subprocess.run(["git", *args], cwd=repo, check=True, env={"PATH": "/usr/bin:/bin", **env})
    (repo / "notes.txt").write_text("start\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env={"PATH": "/usr/bin:/bin", **env})
    subprocess.run(["git", "commit", "-qm", "start"], cwd=repo, check=True,
                   env={"PATH": "/usr/bin:/bin", **env})
    ct.configure(zap, "claude")
    rules = [{"match": "COMMIT-IT", "turns": [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": COMMIT,
                                                        "description": "commit"}}]},
        {"text": "Committed."}]}]
    with ScriptedServer(rules, protocol="anthropic") as srv:
        proc = zap("spawn", "--cli", "claude", "--worktree", "--approval", "full", "--cwd",
                   str(repo), "--", "COMMIT-IT please", env={**ct.cli_env("claude", srv), **env})
        assert proc.returncode == 0, proc.err
        sid = proc.out.strip()
        zap("wait", sid, "--timeout", "150", env=env)
        import json

        bodies = json.dumps(srv.requests)
    assert "DONE-GIT" in bodies, ct.dump(zap, sid)
    assert "AUTHOR=Ada Person <ada@example.com>" in bodies, ct.dump(zap, sid)
    assert "SECRET-HELPER" not in bodies  # the rest of ~/.gitconfig stayed out of view
    log = _git(repo, "log", "-1", "--format=%an|%s", f"zapcli/{sid}")
    assert log.strip() == "Ada Person|by the agent"
