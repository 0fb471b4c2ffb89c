"""A repository of the user's and a sandboxed subagent that plants in it:
the set-up the attacks on nested repositories share (`test_nested_trust`,
`test_nested_checkout`)."""

from __future__ import annotations

from pathlib import Path

from tests.parallel.conftest import git

COMMIT = "git -c user.email=a@a -c user.name=a commit -qm"


def make_repo(work: Path) -> Path:
    """`work` made a repository on `main` with one commit."""
    git(work, "init", "-q", "-b", "main")
    (work / "README").write_text("base\n")
    git(work, "add", "README")
    git(work, "commit", "-q", "-m", "base")
    return work


def ended(zap, sid: str) -> None:
    assert zap("wait", "--timeout", "90", sid, timeout=120).returncode in (0, 3)


def agent(zap, script: str) -> None:
    """A sandboxed subagent in the user's repository runs `script` (the injection)."""
    ended(zap, zap.spawn_sh(f"set -e\n{script}\necho planted", "--sandbox", timeout=90))


def spawn_and_merge(zap, task: str):
    """A `--worktree` subagent started from `zap.cwd` runs `task`; if it
    started, every way of taking its work follows (`diff`, the three merges,
    `worktree rm`). Returns the spawn's answer."""
    spawned = zap("spawn", "--worktree", "--cli", "sh", "--sandbox", "--", task)
    if spawned.returncode == 0:
        sid = spawned.out.strip()
        ended(zap, sid)
        for argv in (["diff", sid], ["merge", sid], ["merge", "--squash", sid],
                     ["merge", "--rebase", sid], ["worktree", "rm", sid]):
            zap(*argv, timeout=120)
    return spawned
