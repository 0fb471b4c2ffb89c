"""`spawn --attempts`, `zapcli attempts` and `zapcli pick` (#23): siblings on
one task, each in its own tree, varied by backend; compared (status, diff
stat, tokens, a check run in each tree); one picked and merged, the others'
trees removed with nothing of their work lost. sh and the built-in agent
against the scripted server, real git."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import wait_until
from tests.parallel.conftest import branches, git

TASK = "echo from-sh > answer.txt # then write answer.txt"


def _tree(zap, sid: str) -> Path:
    return Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])


def test_attempts_across_backends_compared_checked_and_one_picked(zap, repo, model):
    model([{"match": "write answer.txt", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "answer.txt",
                                                        "content": "from-agent\n"}}]},
        {"text": "wrote it"}]}])
    proc = zap("spawn", "--attempt-cli", "sh,zapcli", "--", TASK)
    assert proc.returncode == 0, proc.err
    sh_id, agent_id = proc.out.split()
    assert zap("wait", "--timeout", "60", sh_id, agent_id).returncode == 0
    assert _tree(zap, sh_id) != _tree(zap, agent_id) and not (repo / "answer.txt").exists()

    doc = zap.json("attempts", agent_id[-8:], "--check", "grep -q agent answer.txt")
    by_id = {a["id"]: a for a in doc["attempts"]}
    assert [a["id"] for a in doc["attempts"]] == [sh_id, agent_id] and doc["task"] == TASK
    assert (by_id[sh_id]["cli"], by_id[agent_id]["cli"]) == ("sh", "zapcli")
    assert all(a["status"] == "completed" and a["diff"] == {"files": 1, "insertions": 1,
                                                           "deletions": 0} for a in by_id.values())
    assert by_id[agent_id]["tokens"]["input_tokens"] > 0 and by_id[sh_id]["tokens"]["input_tokens"] == 0
    assert (by_id[sh_id]["check"]["exit_code"], by_id[agent_id]["check"]["exit_code"]) == (1, 0)
    text = zap("attempts", sh_id, "--check", "grep -q agent answer.txt").out
    assert "2 attempts at:" in text and "check: passed" in text and "check: exited with code 1" in text
    assert "tokens" in text and "zapcli pick ID" in text

    picked = zap.json("pick", agent_id)
    assert picked["merged"] and picked["picked"] == agent_id and list(picked["removed"]) == [sh_id]
    assert (repo / "answer.txt").read_text() == "from-agent\n"
    assert not _tree(zap, sh_id).exists()
    # the other attempt's work is a commit on its branch, kept
    assert git(repo, "show", f"zapcli/{sh_id}:answer.txt") == "from-sh"
    assert "kept" in picked["removed"][sh_id]
    after = {a["id"]: a for a in zap.json("attempts", agent_id)["attempts"]}
    assert after[agent_id]["merged"]["how"] == "fast-forward"
    gc = next(d for d in zap.json("gc")["worktrees"] if d["id"] == agent_id)
    assert gc["action"] == "remove" and gc["branch_deleted"]  # merged: tree and branch go


def test_attempts_are_refused_whole_before_anything_is_created(zap, repo):
    for args, words in ((["--attempts", "0"], "between 1 and 16"),
                        (["--attempt-cli", "sh,nosuch"], "unknown backend 'nosuch'"),
                        (["--cli", "sh", "--attempt-cli", "sh"], "both choose the backend"),
                        (["--cli", "sh", "--attempts", "1", "--attempt-model", "a,b"],
                         "fewer than the 2 values")):
        proc = zap("spawn", *args, "--", "true")
        assert proc.returncode == 2 and words in proc.err, (args, proc.err)
    assert not list((zap.home / "subagents").glob("*.jsonl")) if (zap.home / "subagents").exists() else True
    assert branches(repo) == ["refs/heads/main"]
    one = zap.spawn_sh("true", "--worktree")
    res = zap("attempts", one)
    assert res.returncode == 1 and "not spawned with --attempts" in res.err


def test_attempts_outside_a_repository_say_attempts_not_worktree(zap, tmp_path):
    """New user, round 5: `spawn --attempts 2` outside git said '--worktree
    needs a git repository' — a flag never given."""
    away = tmp_path / "no-repo"
    away.mkdir()
    for args in (["--attempts", "2", "--cli", "sh"], ["--attempt-cli", "sh,sh"]):
        proc = zap("spawn", *args, "--cwd", str(away), "--", "true")
        assert proc.returncode == 2 and "--attempts (each attempt works in a git worktree of its own) " \
            "needs a git repository" in proc.err, (args, proc.err)
        assert "--worktree" not in proc.err, proc.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").glob("*.jsonl"))


def test_pick_stops_a_running_sibling_and_keeps_its_work(zap, repo, tmp_path):
    task = (f'echo "partial of $ZAPCLI_SUBAGENT_ID" > partial.txt; '
            f'until [ -e "{tmp_path}/$ZAPCLI_SUBAGENT_ID" ]; do sleep 0.1; done; echo done > done.txt')
    ids = subprocess.run([sys.executable, "-m", "zapcli", "spawn", "--cli", "sh", "--attempts", "2",
                          "--", task], cwd=zap.cwd, env=zap.env, capture_output=True, text=True,
                         check=True).stdout.split()
    fast, slow = ids
    (tmp_path / fast).touch()
    assert zap("wait", "--timeout", "60", fast).returncode == 0
    wait_until(lambda: (_tree(zap, slow) / "partial.txt").exists(), 30, 0.2)
    text = zap("pick", fast).out
    assert f"stopped {slow}" in text and f"removed the tree of {slow}" in text, text
    assert zap.status(slow) == "cancelled"
    assert (repo / "done.txt").exists() and not _tree(zap, slow).exists()
    assert git(repo, "show", f"zapcli/{slow}:partial.txt") == f"partial of {slow}"


def test_pick_refuses_an_attempt_that_did_not_complete_unless_forced(zap, repo):
    """A failed attempt (here: its work exited 3) is not merged by mistake:
    pick says which status it ended with and how to take it anyway; nothing
    is merged and no sibling is touched. --force takes it."""
    ids = subprocess.run([sys.executable, "-m", "zapcli", "spawn", "--cli", "sh", "--attempts", "2",
                          "--", "echo half > half.txt; exit 3"], cwd=zap.cwd, env=zap.env,
                         capture_output=True, text=True, check=True).stdout.split()
    zap("wait", "--timeout", "60", *ids)
    first, second = ids
    assert zap.status(first) == "failed"
    res = zap("pick", first)
    assert res.returncode == 1, (res.returncode, res.out, res.err)
    assert "failed" in res.err and "failed (exit code 3)" in res.err and "--force" in res.err, res.err
    assert "Traceback" not in res.err
    assert not (repo / "half.txt").exists() and _tree(zap, second).exists()
    doc = zap.json("pick", first)
    assert doc["error"]["code"] == "not_completed", doc

    forced = zap.json("pick", first, "--force")
    assert forced["merged"] and forced["picked"] == first, forced
    assert (repo / "half.txt").read_text() == "half\n" and not _tree(zap, second).exists()


def _attempts(zap, n: int, task: str) -> list[str]:
    ids = subprocess.run([sys.executable, "-m", "zapcli", "spawn", "--cli", "sh", "--attempts", str(n),
                          "--", task], cwd=zap.cwd, env=zap.env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert zap("wait", "--timeout", "60", *ids).returncode == 0
    return ids


def test_attempts_show_the_task_as_given(zap, repo):
    """A new user's trial: the header folded the task's spaces — `"a    b"`
    read `"a b"`, and two lines read as one command. It shows the task as
    given: its spaces kept, a line break marked, on one line."""
    ids = _attempts(zap, 2, 'printf "a    b\\n" > spaced.txt\n\necho   second')
    head = zap("attempts", ids[0]).out.splitlines()[0]
    assert head == '[SubAgent] 2 attempts at: printf "a    b\\n" > spaced.txt ↵ echo   second', head
    assert 'printf "a    b\\n" > spaced.txt ↵ echo   second' in zap("list").out


def test_pick_removes_a_sibling_branch_that_holds_the_same_work(zap, repo):
    """A new user's trial: pick kept a losing attempt's branch whose work was
    exactly the picked one's. Its tree is the picked work's (same tree id):
    nothing is lost, so it goes like a branch with nothing beyond its base.
    A sibling with other work keeps its branch (the first test)."""
    winner, twin = _attempts(zap, 2, "echo same > same.txt")
    picked = zap.json("pick", winner)
    assert picked["merged"] and list(picked["removed"]) == [twin], picked
    assert (repo / "same.txt").read_text() == "same\n"
    assert f"refs/heads/zapcli/{twin}" not in branches(repo), branches(repo)
    assert "same work as" in picked["removed"][twin], picked["removed"]
    assert not _tree(zap, twin).exists()
