"""`attempts --check` is an evaluation: what the check writes in an
attempt's tree (a `__pycache__`, a build folder, a changed file, a staged
index) is gone once it has run, and the attempt's own work — committed,
uncommitted, untracked, ignored — is exactly as the subagent left it. So
`pick` merges the attempt, never the check's leftovers.

Before: the guide's own loop (docs/how-to/worktrees.md, "Try a task several
ways") committed the check's `__pycache__/shop.cpython-*.pyc` onto the
user's branch, and the other attempt's kept branch held it too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.parallel.conftest import git

GUIDE_TASK = 'printf "def total(items):\\n    return sum(items) or 0\\n" > shop.py'
GUIDE_CHECK = 'python3 -c "import shop; assert shop.total([]) == 0"'


def _tree(zap, sid: str) -> Path:
    return Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])


def _spawn(zap, n: int, task: str) -> list[str]:
    ids = subprocess.run([sys.executable, "-m", "zapcli", "spawn", "--attempts", str(n), "--cli",
                          "sh", "--", task], cwd=zap.cwd, env=zap.env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert zap("wait", "--timeout", "60", *ids).returncode == 0
    return ids


def _files(root: Path) -> dict[str, tuple[str, int]]:
    """Every path of the tree but its `.git` file: its content (or link
    target, or 'dir') and its mode."""
    seen: dict[str, tuple[str, int]] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + names:
            p = Path(folder, name)
            rel = str(p.relative_to(root))
            if rel == ".git":
                continue
            st = p.lstat()
            what = (os.readlink(p) if p.is_symlink() else "dir" if p.is_dir()
                    else p.read_bytes().decode("latin-1"))
            seen[rel] = (what, st.st_mode)
    return seen


def test_the_guides_check_leaves_no_pycache_for_pick_to_merge(zap, repo):
    git(repo, "rm", "-q", "README")
    (repo / "shop.py").write_text("def total(items):\n    return sum(items)\n")
    git(repo, "add", "shop.py")
    git(repo, "commit", "-qm", "first")
    first, second = _spawn(zap, 2, GUIDE_TASK)

    doc = zap.json("attempts", first, "--check", GUIDE_CHECK)
    assert [a["check"]["exit_code"] for a in doc["attempts"]] == [0, 0], [a["check"] for a in doc["attempts"]]
    for sid in (first, second):
        assert not (_tree(zap, sid) / "__pycache__").exists(), sid

    text = zap("pick", first).out
    assert "1 file changed" in text and "__pycache__" not in text, text
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "shop.py"
    assert not (repo / "__pycache__").exists()
    # the other attempt did the same work: nothing of it is lost with its branch
    assert f"the same work as the picked {first}" in text, text
    assert git(repo, "branch", "--list", f"zapcli/{second}") == ""


def test_a_checks_writes_are_undone_and_the_attempts_own_work_kept(zap, repo):
    """Created files and folders (ignored ones too) go; a changed, deleted or
    re-moded file of the attempt's — committed, uncommitted, untracked, a
    link — is put back. A changed ignored file is left, and named."""
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    os.chmod(repo / "tool.sh", 0o755)
    git(repo, "add", ".gitignore", "tool.sh")
    git(repo, "commit", "-qm", "ignore build")
    work = ("echo committed > kept.txt && git add kept.txt && "
            "git -c user.name=a -c user.email=a@b commit -qm kept && "
            "echo changed >> README && echo staged > staged.txt && git add staged.txt && "
            "echo untracked > notes.txt && mkdir -p build && echo old > build/cache && "
            "echo old > run.log && ln -s notes.txt link")
    (sid,) = _spawn(zap, 1, work)
    tree = _tree(zap, sid)
    before = _files(tree)
    status = git(tree, "status", "--porcelain", "--untracked-files=all", "--ignored")
    diff = zap("diff", sid, "--stat").out

    check = ("mkdir -p out/deep && echo x > out/deep/artifact.o && echo y > new.txt && "
             "echo more >> README && echo more >> notes.txt && echo more >> kept.txt && "
             "rm staged.txt && chmod 600 tool.sh && echo new > build/cache && "
             "echo new > build/other && echo new > fresh.log && rm link && ln -s README link && "
             "mkdir -p cache/ro && echo z > cache/ro/f && chmod 555 cache/ro && test -f kept.txt")
    doc = zap.json("attempts", sid, "--check", check)
    assert doc["attempts"][0]["check"]["exit_code"] == 0, doc["attempts"][0]["check"]

    # an ignored file git keeps no copy of: left as the check left it, and said
    assert (tree / "build" / "cache").read_text() == "new\n"
    assert [n for n in doc["attempts"][0]["check"]["notes"] if "after the check" in n] == [
        "after the check: ignored files it changed are left as it left them (git keeps no copy "
        "of them): build/cache"], doc
    after = _files(tree)
    after["build/cache"] = before["build/cache"]
    assert after == before, {k: (before.get(k), after.get(k))
                             for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert git(tree, "status", "--porcelain", "--untracked-files=all", "--ignored") == status
    assert zap("diff", sid, "--stat").out == diff
