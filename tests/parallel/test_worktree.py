"""`--worktree` with real git and real processes (docs/explanation/rules.md#parallel-coding, case C21)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import sleep_marker, wait_until
from tests.parallel.conftest import branches, git


def _spawn_at_once(zap, cmds: list[str]) -> list[str]:
    """Start one `spawn --worktree` process per command, all at the same instant."""
    procs = [subprocess.Popen([sys.executable, "-m", "zapcli", "spawn", "--cli", "sh", "--worktree",
                               "--timeout", "60", "--", c], cwd=zap.cwd, env=zap.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in cmds]
    out = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _o, e in out]
    return [o.strip() for o, _e in out]


def _doc(zap, sid: str) -> dict:
    return zap.json("poll", "--no-wait", sid)["subagents"][0]


def test_c21_eight_parallel_spawns_all_get_their_tree(zap, repo):
    base = git(repo, "rev-parse", "HEAD")
    ids = _spawn_at_once(zap, [f"echo {n} > out.txt; sleep 1" for n in range(8)])
    assert len(set(ids)) == 8
    assert zap("wait", "--timeout", "60", *ids).returncode == 0
    assert len(git(repo, "worktree", "list").split("\n")) == 9
    assert sorted(branches(repo)) == sorted(["refs/heads/main"] + [f"refs/heads/zapcli/{i}" for i in ids])
    assert not (repo / "out.txt").exists()  # nobody worked in the main checkout
    numbers = set()
    listed = {d["id"]: d for d in zap.json("list")["subagents"]}
    for sid in ids:
        trail = zap.trail(sid).read_text()
        assert "could not lock" not in trail and ".lock" not in trail
        doc = _doc(zap, sid)
        tree = doc["worktree"]
        assert tree["branch"] == f"zapcli/{sid}" and tree["base"] == base and tree["ready"]
        assert tree["state"] == "dirty" and tree["untracked"] == 1 and not tree["base_moved"]
        assert listed[sid]["worktree"]["path"] == tree["path"]  # the receipt in list --json too
        numbers.add(Path(tree["path"], "out.txt").read_text().strip())
        assert git(Path(tree["path"]), "rev-parse", "--abbrev-ref", "HEAD") == f"zapcli/{sid}"
    assert numbers == {str(n) for n in range(8)}  # each worked only in its own tree

    # poll flags a result whose base is no longer the workspace's HEAD
    (repo / "other.txt").write_text("moved on\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-q", "-m", "main moved")
    tree = _doc(zap, ids[0])["worktree"]
    assert tree["base_moved"] and tree["workspace_head"] == git(repo, "rev-parse", "HEAD")
    assert "HEAD moved since the base" in zap("poll", "--no-wait", ids[0]).out


def test_c21_cleanup_keeps_what_is_not_safe_to_drop(zap, repo):
    commit = "echo x > a.txt && git add a.txt && git -c user.email=t@t -c user.name=t commit -qm wip"
    d = zap.spawn_sh("echo draft > notes.txt", "--worktree")
    u = zap.spawn_sh(commit, "--worktree")
    c = zap.spawn_sh("true", "--worktree")
    assert zap("wait", "--timeout", "30", d, u, c).returncode == 0
    wt = _doc(zap, c)["worktree"]["path"]
    marker = sleep_marker(3333)
    z = zap.spawn_sh(f"exec sleep {marker}", "--cwd", wt)
    wait_until(lambda: zap.status(z) == "running")

    dry = zap.json("gc", "--dry-run")["worktrees"]
    by_id = {x["id"]: x for x in dry}
    assert by_id[d]["action"] == "keep" and "1 untracked file" in by_id[d]["reason"]
    assert by_id[u]["action"] == "keep" and "1 unpushed commit" in by_id[u]["reason"]
    assert by_id[c]["action"] == "keep" and z in by_id[c]["reason"]
    zap("gc", check=True)
    assert Path(wt).is_dir()  # in use by a live subagent: kept
    for sid, words in ((d, "1 untracked file"), (u, "1 unpushed commit")):
        text = zap("poll", "--no-wait", sid).out
        assert "Worktree: " in text and f"zapcli/{sid}" in text and words in text
    listed = zap.json("worktree", "list")["worktrees"]
    assert next(t for t in listed if t["id"] == c)["in_use_by"] == [z]

    zap("kill", z, check=True)
    gc = zap.json("gc")["worktrees"]
    removed = next(x for x in gc if x["id"] == c)
    assert removed["action"] == "remove" and removed["branch_deleted"]
    assert not Path(wt).exists()
    assert f"refs/heads/zapcli/{c}" not in branches(repo)
    for sid in (d, u):
        assert Path(_doc(zap, sid)["worktree"]["path"]).is_dir()
        assert f"refs/heads/zapcli/{sid}" in branches(repo)
    assert "Worktree state: removed" in zap("poll", "--no-wait", c).out


def test_a_failed_creation_leaves_no_branch_and_never_runs_the_task(zap, repo):
    """git makes the branch, then fails to check out a file no file system can
    hold (a 300-byte name; zapcli runs no hooks, so a failing hook cannot)."""
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input="x\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{'n' * 300}")
    git(repo, "commit", "-q", "-m", "a name too long to check out")
    sid = zap.spawn_sh("touch ran-here", "--worktree")
    assert zap.wait_status(sid) == "failed"
    doc = _doc(zap, sid)
    assert doc["reason"].startswith("worktree: git worktree add failed")
    assert "File name too long" in doc["reason"] or "reset" in doc["reason"], doc["reason"]
    assert doc["worktree"]["error"] and not doc["worktree"]["ready"]
    assert branches(repo) == ["refs/heads/main"]  # no orphan branch
    assert len(git(repo, "worktree", "list").split("\n")) == 1
    assert not (repo / "ran-here").exists()
    assert not any(Path(str(zap.home) + "-worktrees").glob("*/ran-here"))


def test_refused_at_spawn_outside_a_repository(zap):
    proc = zap("spawn", "--cli", "sh", "--worktree", "--", "true")
    assert proc.returncode == 2 and "--worktree needs a git repository" in proc.err
    assert not list((zap.home / "subagents").glob("*.jsonl")) if (zap.home / "subagents").exists() else True


def test_refused_at_spawn_in_a_repository_with_no_commit_yet(zap):
    """Tryout: it said the folder "is not in" a repository, quoting git's usage
    line ('git <command> [<revision>...] -- [<file>...]')."""
    git(zap.cwd, "init", "-q")
    (zap.cwd / "sub").mkdir()
    proc = zap("spawn", "--cli", "sh", "--worktree", "--", "true", env={"LANG": "de_DE.UTF-8"})
    assert proc.returncode == 2, proc.err
    assert "has no commit yet" in proc.err and "git commit" in proc.err, proc.err
    assert "not in one" not in proc.err and "<command>" not in proc.err, proc.err
    assert not (zap.home / "subagents").exists() or not list((zap.home / "subagents").glob("*.jsonl"))


def test_worktree_rm_refuses_work_and_never_a_running_tree(zap, repo):
    dirty = zap.spawn_sh("echo draft > notes.txt", "--worktree")
    unpushed = zap.spawn_sh("echo x > a.txt && git add a.txt && "
                            "git -c user.email=t@t -c user.name=t commit -qm wip", "--worktree")
    running = zap.spawn_sh(f"exec sleep {sleep_marker(3334)}", "--worktree")
    assert zap("wait", "--timeout", "30", dirty, unpushed).returncode == 0
    wait_until(lambda: _doc(zap, running)["worktree"]["ready"], 20, 0.2)

    refused = zap("worktree", "rm", dirty)
    assert refused.returncode == 1 and "1 untracked file" in refused.err and "--force" in refused.err
    refused = zap("worktree", "rm", unpushed)
    assert refused.returncode == 1 and "1 unpushed commit" in refused.err
    refused = zap("worktree", "rm", running, "--force")
    assert refused.returncode == 1 and "never removed while its subagent runs" in refused.err

    done = zap.json("worktree", "rm", dirty, "--force")
    assert done["removed"] and done["branch_deleted"]  # nothing beyond its base
    assert not Path(done["path"]).exists()
    done = zap.json("worktree", "rm", unpushed, "--force")
    assert not Path(done["path"]).exists() and not done["branch_deleted"]
    assert "kept" in done["note"] and f"refs/heads/zapcli/{unpushed}" in branches(repo)
    assert Path(_doc(zap, running)["worktree"]["path"]).is_dir()


def test_worktree_rm_takes_several_ids_each_answering_on_its_own(zap, repo):
    """A new user: `kill` and `rm` take several ids, `worktree rm` took one
    ("Got unexpected extra argument"). Each id answers on its own, as rm's:
    the ones refused are said on stderr, the others still removed, exit 1."""
    first = zap.spawn_sh("true", "--worktree")
    dirty = zap.spawn_sh("echo draft > notes.txt", "--worktree")
    last = zap.spawn_sh("true", "--worktree")
    assert zap("wait", "--timeout", "30", first, dirty, last).returncode == 0
    paths = {sid: Path(_doc(zap, sid)["worktree"]["path"]) for sid in (first, dirty, last)}
    res = zap("worktree", "rm", first, dirty, "sa_20200101_deadbeef", last[-8:])
    assert res.returncode == 1, (res.out, res.err)
    assert not paths[first].exists() and not paths[last].exists() and paths[dirty].is_dir()
    assert res.out.count("[SubAgent] removed the worktree") == 2, res.out
    errors = res.err.splitlines()
    assert len(errors) == 2 and all(e.startswith("zapcli: error: ") for e in errors), res.err
    assert "holds work: 1 untracked file" in errors[0] and "deadbeef does not exist" in errors[1]
    doc = zap.json("worktree", "rm", dirty, "--force")  # one id: its document, as before
    assert doc["removed"] and doc["id"] == dirty and not paths[dirty].exists()
    again = zap("worktree", "rm", first, last)  # all refused: nothing on stdout
    assert again.returncode == 1 and again.out == "" and again.err.count("zapcli: error:") == 2


def test_rm_and_clean_take_a_removed_subagents_clean_worktree_with_it(zap, repo):
    """A new user removed a merged subagent with `clean` and found its tree
    and branch still there, then listed as `clean (base ?)`. A subagent
    whose tree holds no unmerged work takes it along (as `worktree rm`: its
    branch too, when merged); one that holds work keeps its subagent, as
    before: nothing is lost by the way."""
    merged = zap.spawn_sh("echo done > done.txt && git add done.txt && git -c user.name=z "
                          "-c user.email=z@z commit -qm done", "--worktree")
    idle = zap.spawn_sh("true", "--worktree")
    dirty = zap.spawn_sh("echo draft > notes.txt", "--worktree")
    plain = zap.spawn_sh("true")
    assert zap("wait", "--timeout", "30", merged, idle, dirty, plain).returncode == 0
    paths = {sid: Path(_doc(zap, sid)["worktree"]["path"]) for sid in (merged, idle, dirty)}
    assert zap("merge", merged).returncode == 0
    doc = zap.json("rm", merged, plain, dirty)
    assert sorted(doc["removed"]) == sorted([merged, plain]), doc
    assert doc["worktrees_removed"] == [{"id": merged, "path": str(paths[merged])}], doc
    assert not paths[merged].exists() and f"zapcli/{merged}" not in branches(repo)
    assert paths[dirty].is_dir() and [r["id"] for r in doc["refused"]] == [dirty]
    out = zap("clean").out
    assert f"{idle}: removed, with its worktree {paths[idle]}" in out, out
    assert not paths[idle].exists() and paths[dirty].is_dir()
    assert zap("worktree", "list", "--json").returncode == 0


def test_gc_reports_a_failing_remove_and_never_deletes_by_hand(zap, repo):
    sid = zap.spawn_sh("true", "--worktree")
    assert zap.wait_status(sid) == "completed"
    path = Path(_doc(zap, sid)["worktree"]["path"])
    dry = next(x for x in zap.json("gc", "--dry-run")["worktrees"] if x["id"] == sid)
    assert dry["action"] == "remove" and "clean" in dry["reason"]
    assert path.is_dir()  # --dry-run removes nothing
    git(repo, "worktree", "lock", str(path))  # git now refuses to remove it
    gc = zap("gc")
    assert gc.returncode == 0 and "NOT removed: git worktree remove failed" in gc.out
    assert (path / "README").is_file()  # no rm -rf behind git's back
    assert f"refs/heads/zapcli/{sid}" in branches(repo)


def test_the_built_in_agent_edits_only_its_tree(zap, repo, model):
    model([{"match": "write hello", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": "hello.txt", "content": "hi\n"}}]},
        {"text": "Wrote hello.txt."}]}])
    proc = zap("spawn", "--agent", "fixer", "--worktree", "--", "write hello")
    assert proc.returncode == 0, proc.err
    sid = proc.out.strip()
    assert zap.wait_status(sid) == "completed", zap("replay", sid).out
    tree = Path(_doc(zap, sid)["worktree"]["path"])
    assert (tree / "hello.txt").read_text() == "hi\n"
    assert not (repo / "hello.txt").exists()


def test_a_tool_caller_gets_a_worktree_too(zap, repo):
    """The spawn tool (zapcli call, MCP, zapcli run) takes `worktree` like the CLI's flag."""
    res = subprocess.run([sys.executable, "-m", "zapcli", "call", "--json"], cwd=zap.cwd, env=zap.env,
                         input='{"action": "spawn", "cli": "sh", "task": "echo tool > t.txt", '
                               '"worktree": true}', capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    import json

    sid = json.loads(res.stdout)["id"]
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    tree = _doc(zap, sid)["worktree"]
    assert tree["branch"] == f"zapcli/{sid}" and tree["ready"]
    assert Path(tree["path"], "t.txt").read_text() == "tool\n"
    assert not (repo / "t.txt").exists()


def test_a_tree_whose_repository_or_subagent_is_gone_can_still_be_removed(zap, repo, tmp_path):
    """tryout: a scratch clone deleted after its subagent ran left a tree that no
    command could remove ("check ZAPCLI_HOME"); `zapcli rm` of the subagent left
    one that `worktree rm` called an id that "does not exist"."""
    import shutil

    clone = tmp_path / "clone"
    git(repo, "clone", "-q", str(repo), str(clone))
    proc = subprocess.run([sys.executable, "-m", "zapcli", "spawn", "--cli", "sh", "--worktree",
                           "--", "echo y > y.txt"], cwd=clone, env=zap.env, capture_output=True,
                          text=True, timeout=60)
    gone = proc.stdout.strip()
    kept = zap.spawn_sh("echo z > z.txt", "--worktree")
    assert zap("wait", "--timeout", "60", gone, kept).returncode == 0
    tree_gone = Path(_doc(zap, gone)["worktree"]["path"])
    tree_kept = Path(_doc(zap, kept)["worktree"]["path"])
    shutil.rmtree(clone)  # the repository goes, its tree stays
    listed = zap("worktree", "list").out
    assert "no longer exists" in listed and "fatal" not in listed
    res = zap("worktree", "rm", gone)
    assert res.returncode == 1 and "no longer exists" in res.err and "--force" in res.err
    assert tree_gone.is_dir()
    res = zap("worktree", "rm", "--force", gone)
    assert res.returncode == 0, res.err
    assert not tree_gone.exists()

    assert zap("rm", kept).returncode == 1  # its tree holds work (untracked z.txt): kept
    zap.trail(kept).unlink()  # gone by hand (or removed by an earlier version): the tree stays
    assert tree_kept.is_dir()
    res = zap("worktree", "rm", kept)
    assert res.returncode == 1 and "holds work" in res.err
    assert zap("worktree", "rm", "--force", kept).returncode == 0
    assert not tree_kept.exists()


def test_no_removal_loses_the_way_to_a_trees_unmerged_work(zap, repo):
    """New user (round 4): `clean`, `gc` and a spawn's retention past
    `max_kept` deleted a subagent whose tree held work it had not merged; the
    tree stayed on disk but `merge`, `diff` and `poll` said "does not exist".
    Each removal keeps it now, and `rm` says how to go on; once merged it goes."""
    w = zap.spawn_sh("echo precious > precious.txt", "--worktree")
    done = zap.spawn_sh("true")
    assert zap("wait", "--timeout", "30", w, done).returncode == 0
    tree = Path(_doc(zap, w)["worktree"]["path"])

    zap("spawn", "--cli", "sh", "--", "true", env={"ZAPCLI_MAX_KEPT": "1"}, check=True)  # its retention
    zap("wait", "--all", "--timeout", "30")
    zap("gc", env={"ZAPCLI_MAX_KEPT": "1"})
    zap("clean")
    refused = zap("rm", w)
    assert refused.returncode != 0 and "zapcli merge" in refused.out and "worktree rm --force" in refused.out
    assert zap.trail(w).exists()
    assert "precious" in zap("diff", w, check=True).out  # the work is still reachable

    zap("merge", w, check=True)
    assert (repo / "precious.txt").read_text() == "precious\n"
    assert zap("rm", w).returncode == 0
    assert not zap.trail(w).exists() and not tree.exists()  # merged: its tree went with it
