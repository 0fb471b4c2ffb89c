"""C23 — siblings shared one scratch folder and read each other's notes. Each
subagent's work gets its own TMPDIR (TMP, TEMP) under its state folder,
made before the work starts and removed when it ends; worktree paths
come from the id, never the task; zapcli removes only trees registered to
that id."""

from __future__ import annotations

from pathlib import Path

from tests.parallel.conftest import git

NOTES = ('echo "$TMPDIR $TMP $TEMP" > where.txt; ls -A "$TMPDIR" > before.txt; '
         'echo "notes of $ZAPCLI_SUBAGENT_ID" > "$TMPDIR/notes.md"; sleep 1; '
         'cat "$TMPDIR/notes.md" > read-back.txt; stat -c %a "$TMPDIR" > mode.txt; '
         'python3 -c "import tempfile; print(tempfile.gettempdir())" > py.txt')


def _tree(zap, sid: str) -> Path:
    return Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])


def test_c23_siblings_never_share_a_scratch_folder(zap, repo, model):
    a = zap.spawn_sh(NOTES, "--worktree")
    b = zap.spawn_sh(NOTES, "--worktree")
    model([{"match": "where is tmp", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": 'echo "$TMPDIR" > agent-tmp.txt'}}]},
        {"text": "done"}]}])
    c = zap("spawn", "--agent", "general", "--approval", "full", "--worktree", "--",
            "where is tmp").out.strip()
    assert zap("wait", "--timeout", "60", a, b, c).returncode == 0, zap("replay", c).out
    for sid in (a, b):
        scratch = zap.home / "subagents" / f"{sid}.tmp"
        tree = _tree(zap, sid)
        assert (tree / "where.txt").read_text().split() == [str(scratch)] * 3
        assert (tree / "before.txt").read_text() == ""  # made empty, before the work
        assert (tree / "read-back.txt").read_text() == f"notes of {sid}\n"  # its own, not a sibling's
        assert (tree / "py.txt").read_text().strip() == str(scratch)
        assert (tree / "mode.txt").read_text().strip() == "700"
        assert tree.name == sid and tree.parent.name.endswith("-worktrees")
    agent_tmp = (_tree(zap, c) / "agent-tmp.txt").read_text().strip()
    assert agent_tmp == str(zap.home / "subagents" / f"{c}.tmp")  # the agent's bash tool too

    # gone when each ended (issue 27: what was worth keeping is in the workspace)
    for sid in (a, b, c):
        assert not (zap.home / "subagents" / f"{sid}.tmp").exists()
    # one a runner could not remove (killed with SIGKILL) goes with the subagent: rm, gc
    left = zap.home / "subagents" / f"{b}.tmp"
    left.mkdir(mode=0o700)
    (left / "notes.md").write_text("left behind\n")
    zap("worktree", "rm", "--force", a, check=True)
    (zap.home / "subagents" / f"{a}.tmp").mkdir(mode=0o700)
    assert zap("rm", a).returncode == 0
    assert not (zap.home / "subagents" / f"{a}.tmp").exists() and left.exists()
    (zap.home / "subagents" / f"{b}.jsonl").unlink()  # a trail deleted by hand: gc takes the rest
    zap("gc", check=True)
    assert not left.exists()


def test_c23_zapcli_removes_only_trees_registered_to_that_id(zap, repo):
    """A folder named like a subagent tree but not one git knows is never removed,
    and a task that names another tree's path does not make it that tree."""
    victim = zap.spawn_sh("echo mine > mine.txt", "--worktree")
    assert zap("wait", "--timeout", "60", victim).returncode == 0
    victim_tree = _tree(zap, victim)
    other = zap.spawn_sh(f"cat {victim_tree}/mine.txt", "--worktree")
    assert zap("wait", "--timeout", "60", other).returncode == 0
    assert _tree(zap, other).name == other  # from its id, not from the path in its task
    planted = victim_tree.parent / "sa_20260101_0badc0de"
    planted.mkdir()
    (planted / "precious.txt").write_text("not zapcli's\n")
    zap("worktree", "rm", other, check=True)
    zap("gc", check=True)
    assert (planted / "precious.txt").read_text() == "not zapcli's\n"
    assert (victim_tree / "mine.txt").exists()
    assert str(planted) not in git(repo, "worktree", "list")
