"""C28 — a resumed agent's tree, holding the first run's commits, was deleted
by a cleanup that also ignored untracked files. zapcli: commits of any run
stay reachable from a branch; untracked files count as work; `continue` of a
subagent whose tree is gone makes it again from its branch (or from the
commit zapcli recorded when it removed it), or refuses naming the missing
path — never runs in the main checkout. The built-in agent against the
scripted server, real git."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import record_of
from tests.parallel.conftest import branches, git

COMMIT = "git -c user.email=a@a -c user.name=a commit -qm"


def _bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def _id(zap, *args: str) -> str:
    proc = zap(*args)
    assert proc.returncode == 0, proc.err
    return proc.out.strip()


def _tree(zap, sid: str) -> Path:
    return Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])


def test_c28_continue_after_a_pruned_tree_and_no_commit_ever_unreachable(zap, repo, model):
    model([
        {"match": "first run", "turns": [
            _bash(f"echo one > one.txt && git add one.txt && {COMMIT} one && echo draft > draft.txt"),
            {"text": "committed one, drafted"},
            _bash("pwd > where.txt; ls > seen.txt"), {"text": "looked"}]},
        {"match": "clean run", "turns": [{"text": "nothing to do"}, _bash("pwd > where.txt"),
                                         {"text": "back"}]},
        {"match": "lost run", "turns": [_bash(f"echo x > x.txt && git add x.txt && {COMMIT} x"),
                                        {"text": "made x"}, _bash("touch ran-here"), {"text": "?"}]},
    ])
    spawn = ("spawn", "--agent", "general", "--approval", "full", "--worktree", "--")
    first = _id(zap, *spawn, "first run")
    assert zap("wait", "--timeout", "60", first).returncode == 0, zap("replay", first).out
    tree = _tree(zap, first)
    one = git(tree, "rev-parse", "HEAD")

    # untracked files and an unpushed commit are work: neither gc nor rm takes the tree
    kept = next(d for d in zap.json("gc")["worktrees"] if d["id"] == first)
    assert kept["action"] == "keep" and "1 untracked file" in kept["reason"]
    refused = zap("worktree", "rm", first)
    assert refused.returncode == 1 and "1 untracked file" in refused.err
    assert tree.is_dir()

    # the tree is pruned by hand; continue makes it again from its branch
    shutil.rmtree(tree)
    second = _id(zap, "continue", first, "look around")
    assert zap("wait", "--timeout", "60", second).returncode == 0, zap("replay", second).out
    assert record_of(zap, second, "worktree")["how"] == "reattached"
    assert (tree / "where.txt").read_text().strip() == str(tree)  # in its tree, not the checkout
    assert "one.txt" in (tree / "seen.txt").read_text()
    assert not (repo / "where.txt").exists()
    assert git(repo, "for-each-ref", "--contains", one, "--format=%(refname:short)") == f"zapcli/{first}"
    kept = next(d for d in zap.json("gc")["worktrees"] if d["id"] == first)
    assert kept["action"] == "keep" and "1 unpushed commit" in kept["reason"]

    # a clean tree removed by gc (branch deleted) is made again at the commit it had
    clean = _id(zap, *spawn, "clean run")
    assert zap("wait", "--timeout", "60", clean).returncode == 0
    base = git(_tree(zap, clean), "rev-parse", "HEAD")
    zap("gc", check=True)
    assert not _tree(zap, clean).exists() and f"refs/heads/zapcli/{clean}" not in branches(repo)
    assert record_of(zap, clean, "worktree_removed")["tip"] == base
    again = _id(zap, "continue", clean, "come back")
    assert zap("wait", "--timeout", "60", again).returncode == 0, zap("replay", again).out
    assert record_of(zap, again, "worktree")["how"] == "recreated"
    assert (_tree(zap, clean) / "where.txt").read_text().strip() == str(_tree(zap, clean))

    # tree and branch deleted outside zapcli: refused, naming the path; nothing runs
    lost = _id(zap, *spawn, "lost run")
    assert zap("wait", "--timeout", "60", lost).returncode == 0
    lost_tree = _tree(zap, lost)
    git(repo, "worktree", "remove", "--force", str(lost_tree))
    git(repo, "branch", "-D", f"zapcli/{lost}")
    before = len(list((zap.home / "subagents").glob("*.jsonl")))
    res = zap("continue", lost, "go on")
    assert res.returncode == 1 and str(lost_tree) in res.err and "removed outside zapcli" in res.err
    assert len(list((zap.home / "subagents").glob("*.jsonl"))) == before
    assert not (repo / "ran-here").exists()
