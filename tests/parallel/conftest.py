"""Fixtures for docs/explanation/rules.md#parallel-coding: a real git repository (with a bare `origin`) as the
test's working directory, and a scripted model server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

GIT_ID = ["-c", "user.email=t@t", "-c", "user.name=t"]


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, (args, proc.stderr)
    return proc.stdout.strip()


@pytest.fixture
def repo(zap, tmp_path: Path) -> Path:
    """C21's setup: a clone of a bare origin with one pushed commit; zap runs in it."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    work = zap.cwd
    git(work, "init", "-q", "-b", "main")
    (work / "README").write_text("base\n")
    git(work, "add", "README")
    git(work, "commit", "-q", "-m", "base")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "HEAD:main")
    git(work, "fetch", "-q", "origin")
    return work


def branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/heads").split("\n")


