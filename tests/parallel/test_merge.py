"""`zapcli diff` and `zapcli merge` (#23) with real git repositories and real
`--worktree` subagents: the work is committed and uncommitted alike; a merge
that would conflict or touch uncommitted changes is refused with the files
named and nothing changed on either side; a merged branch is removed by
`worktree rm` and `gc`; poll says when the checkout moved and whether the
work still merges cleanly."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import sleep_marker, wait_until
from tests.parallel.conftest import branches, git

COMMIT = "git -c user.email=s@s -c user.name=s commit -qm"


def _tree(zap, sid: str) -> Path:
    return Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])


def _done(zap, cmd: str) -> str:
    sid = zap.spawn_sh(cmd, "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode == 0, zap("poll", sid).out
    return sid


def _checkout(repo: Path) -> tuple[str, str, dict[str, str]]:
    """HEAD, `git status`, and every file's text: what must not change on a refusal."""
    files = {str(p.relative_to(repo)): p.read_text() for p in repo.rglob("*")
             if p.is_file() and ".git" not in p.parts}
    return git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), files


def test_a_branch_merged_into_main_is_removed_by_worktree_rm_and_gc(zap, repo):
    """The reported case: after `git merge` of the subagent's branch, `worktree rm`
    kept the branch as "1 commit(s) beyond its base"."""
    by_hand = _done(zap, f"echo one > one.txt && git add one.txt && {COMMIT} one")
    by_zap = _done(zap, f"echo two > two.txt && git add two.txt && {COMMIT} two")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "merge", "-q", "--no-edit",
        f"zapcli/{by_hand}")
    done = zap.json("worktree", "rm", by_hand)
    assert done["branch_deleted"] and "merged" in done["note"], done
    assert f"refs/heads/zapcli/{by_hand}" not in branches(repo)

    assert zap("merge", by_zap).returncode == 0
    decision = next(d for d in zap.json("gc")["worktrees"] if d["id"] == by_zap)
    assert decision["action"] == "remove" and decision["branch_deleted"], decision
    assert not _tree(zap, by_zap).exists() and f"refs/heads/zapcli/{by_zap}" not in branches(repo)
    assert (repo / "one.txt").read_text() == "one\n" and (repo / "two.txt").read_text() == "two\n"


def test_diff_shows_committed_and_uncommitted_work_and_changes_nothing(zap, repo):
    sid = _done(zap, f"echo c > committed.txt && git add committed.txt && {COMMIT} c && "
                     "echo changed >> README && echo new > untracked.txt")
    tree = _tree(zap, sid)
    before = (git(tree, "status", "--porcelain"), git(tree, "rev-parse", f"zapcli/{sid}"))
    doc = zap.json("diff", sid)
    assert doc["uncommitted"] and doc["source"] == "tree"
    assert {(f["path"], f["status"]) for f in doc["files"]} == {
        ("committed.txt", "A"), ("README", "M"), ("untracked.txt", "A")}
    assert doc["stat"] == {"files": 3, "insertions": 3, "deletions": 0}
    text = zap("diff", sid).out
    assert "+changed" in text and "+new" in text and "+c" in text
    stat = zap("diff", "--stat", sid).out
    assert "3 files changed, 3 insertions(+), 0 deletions(-)" in stat and "untracked.txt" in stat
    assert zap("diff", "--name-only", sid).out.split("\n")[:4] == ["README", "committed.txt",
                                                                   "untracked.txt", ""]
    assert (git(tree, "status", "--porcelain"), git(tree, "rev-parse", f"zapcli/{sid}")) == before
    plain = zap("spawn", "--cli", "sh", "--", "true").out.strip()
    refused = zap("diff", plain)
    assert refused.returncode == 1 and "has no worktree" in refused.err


def test_diff_stdout_holds_only_what_git_prints_and_its_header_goes_to_stderr(zap, repo):
    """A new user's `zapcli diff ID --name-only | xargs` took the
    `[SubAgent] … against its base` header for a first file name: stdout
    holds only what git's own option prints (the names, the stat, the patch:
    `git apply` takes it as it is); what was compared is said on stderr."""
    sid = _done(zap, f"echo c > committed.txt && git add committed.txt && {COMMIT} c && "
                     "echo changed >> README && echo new > 'with space.txt'")
    doc = zap.json("diff", sid)
    names = zap("diff", "--name-only", sid)
    assert names.returncode == 0 and names.out == "".join(f"{f['path']}\n" for f in doc["files"])
    assert f"[SubAgent] {sid}: zapcli/{sid} against its base" in names.err
    stat = zap("diff", "--stat", sid)
    assert stat.out.startswith(" README ") and stat.out.endswith(
        " 3 files changed, 3 insertions(+), 0 deletions(-)\n"), stat.out
    assert "[SubAgent]" in stat.err and "[SubAgent]" not in stat.out
    patch = zap("diff", sid)
    assert patch.out == doc["patch"] and "[SubAgent]" in patch.err
    applied = subprocess.run(["git", "apply", "--check", "-"], input=patch.stdout, cwd=repo,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    same = _done(zap, "true")  # no change: git's options print nothing
    for mode in ((), ("--stat",), ("--name-only",)):
        res = zap("diff", *mode, same)
        assert (res.returncode, res.out) == (0, ""), (mode, res.out)
        assert res.err.endswith("no changes\n"), (mode, res.err)


def test_merge_refuses_a_conflict_and_changes_in_the_way_then_merges(zap, repo):
    sid = _done(zap, "echo theirs > README && echo mine > notes.txt")
    tree = _tree(zap, sid)
    tree_before = git(tree, "status", "--porcelain")
    (repo / "README").write_text("ours\n")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "ours")
    checkout = _checkout(repo)
    res = zap("merge", sid)
    assert res.returncode == 1 and "conflict in 1 file(s): README" in res.err, res.err
    assert "checkout is unchanged" in res.err
    # new user (round 4): no word on how to go on, and `git merge` of the branch alone
    # said "Already up to date" (the work was uncommitted in the tree)
    assert f"commit its work in its tree (cd {tree} && git add -A && git commit)" in res.err
    assert f"run git merge zapcli/{sid} in {repo}" in res.err
    assert _checkout(repo) == checkout and git(tree, "status", "--porcelain") == tree_before
    assert git(repo, "rev-parse", f"zapcli/{sid}") == git(repo, "rev-parse", "HEAD~1")
    poll = zap("poll", "--no-wait", sid).out
    assert "moved since the base" in poll and "would conflict in README" in poll

    # the conflict resolved in the tree; an uncommitted change of the checkout in its way
    (tree / "README").write_text("ours\n")
    (repo / "notes.txt").write_text("my own notes\n")
    checkout = _checkout(repo)
    res = zap("merge", sid)
    assert res.returncode == 1 and "uncommitted changes in 1 file(s)" in res.err
    assert "notes.txt" in res.err and _checkout(repo) == checkout
    assert "the work still merges cleanly" in zap("poll", "--no-wait", sid).out

    # out of the way: merged, and a local change elsewhere survives it
    (repo / "notes.txt").unlink()
    (repo / "local.txt").write_text("kept\n")
    doc = zap.json("merge", sid)
    assert doc["how"] == "merge" and doc["committed_work"] and doc["stale"]["base_moved"]
    assert doc["files"] == ["notes.txt"] and (repo / "notes.txt").read_text() == "mine\n"
    assert (repo / "local.txt").read_text() == "kept\n"
    assert git(repo, "rev-parse", "HEAD^2") == git(repo, "rev-parse", f"zapcli/{sid}")
    assert git(tree, "status", "--porcelain") == ""  # its work is a commit on its branch now


def test_squash_and_rebase(zap, repo):
    squashed = _done(zap, f"echo 1 > s1 && git add s1 && {COMMIT} s1 && echo 2 > s2")
    rebased = _done(zap, f"echo r > r1 && git add r1 && {COMMIT} r1 && echo r > r2 && "
                         f"git add r2 && {COMMIT} r2")
    before = git(repo, "rev-parse", "HEAD")
    doc = zap.json("merge", "--squash", squashed)
    assert doc["how"] == "squash" and git(repo, "rev-parse", "HEAD^") == before
    assert git(repo, "rev-list", "--count", "HEAD") == "2"  # one commit, no merge
    assert "Squashed from branch" in git(repo, "log", "-1", "--format=%B")
    listed = {t["id"]: t for t in zap.json("worktree", "list")["worktrees"]}
    assert listed[squashed]["state"]["state"] == "merged"
    done = zap.json("worktree", "rm", squashed)
    assert done["branch_deleted"] and "squash" in done["note"]
    # the subagent's own commits stay reachable (C28): a ref outside the branch list
    kept = f"refs/zapcli/squashed/zapcli/{squashed}"
    assert kept in done["note"] and "s1" in git(repo, "log", "--format=%s", kept).split("\n")

    doc = zap.json("merge", "--rebase", rebased)  # main moved (the squash): replayed on it
    assert doc["how"] == "rebase" and doc["stale"]["base_moved"]
    log = git(repo, "log", "--format=%s", "-3").split("\n")
    assert log[:2] == ["r2", "r1"] and git(repo, "rev-list", "--merges", "HEAD") == ""
    assert git(repo, "rev-parse", "HEAD") == git(repo, "rev-parse", f"zapcli/{rebased}")
    both = zap("merge", "--squash", "--rebase", rebased)
    assert both.returncode == 2 and "choose one" in both.err


def test_a_squash_commit_says_what_the_branch_did_not_the_task_line(zap, repo):
    """new user: `merge --squash`'s message was the raw task line (a shell
    command). One commit of its own: that commit's message; several: the task
    as subject over their subjects; work only left uncommitted: the task, and
    that zapcli committed it."""
    def squashed(cmd: str) -> str:
        sid = _done(zap, cmd)
        assert zap("merge", "--squash", sid).returncode == 0
        return git(repo, "log", "-1", "--format=%B")

    one = squashed(f"echo changed-6 >> f6.txt; git add f6.txt; {COMMIT} 'change 6' -m 'why: the test'")
    assert one == "change 6\n\nwhy: the test"
    several = squashed(f"echo a > a.txt; git add a.txt; {COMMIT} 'add a'; echo b > b.txt; "
                       f"git add b.txt; {COMMIT} 'add b'; echo left > left.txt")
    subject, _, body = several.partition("\n\n")
    assert subject.startswith("echo a > a.txt;")  # the task names it
    assert body.startswith("Squashed from branch zapcli/sa_")
    listed = [line.split(" ", 2) for line in body.splitlines()[1:]]  # `* <hash> <subject>`
    assert body.splitlines()[1] == "* (the work left uncommitted in its tree, committed by zapcli)"
    assert [x[2] for x in listed[1:]] == ["add b", "add a"]
    assert git(repo, "log", "-1", "--format=%s", listed[1][1]) == "add b"  # kept (C28)
    left = squashed("echo only > only.txt")
    assert left.startswith("echo only > only.txt\n\nThe work subagent sa_") and "committed by zapcli" in left


def test_a_running_subagent_or_a_detached_checkout_is_refused(zap, repo):
    running = zap.spawn_sh(f"echo x > x.txt; exec sleep {sleep_marker(3611)}", "--worktree")
    wait_until(lambda: (_tree(zap, running) / "x.txt").exists(), 30, 0.2)
    res = zap("merge", running)
    assert res.returncode == 1 and "only a finished subagent" in res.err
    zap("kill", running, check=True)
    git(repo, "checkout", "-q", "--detach")
    res = zap("merge", running)
    assert res.returncode == 1 and "detached HEAD" in res.err
    assert not (repo / "x.txt").exists()


def test_work_left_in_the_tree_after_the_run_is_merged_and_a_clean_tree_makes_no_commit(zap, repo):
    """The merge of the branch's tip is worked out while the tree is read
    (issue 32); it stands only when the tree holds nothing uncommitted. An
    edit made in the tree after the subagent ended, on top of its commit, is
    merged too — on a fast-forward and on a merge commit alike; a clean
    tree's branch gets no commit of zapcli's."""
    clean = _done(zap, f"echo a > a.txt && git add a.txt && {COMMIT} a")
    tip = git(repo, "rev-parse", f"zapcli/{clean}")
    doc = zap.json("merge", clean)
    assert doc["how"] == "fast-forward" and not doc["committed_work"] and doc["commit"] == tip
    assert git(repo, "rev-parse", f"zapcli/{clean}") == tip  # no snapshot commit was made

    for moved in (False, True):
        sid = _done(zap, f"echo b > b{moved}.txt && git add b{moved}.txt && {COMMIT} b")
        tree = _tree(zap, sid)
        (tree / "README").write_text(f"edited after the run ({moved})\n")
        (tree / f"late{moved}.txt").write_text("late\n")
        if moved:
            (repo / "other.txt").write_text("main moved\n")
            git(repo, "add", "other.txt")
            git(repo, "commit", "-qm", "main moved")
        doc = zap.json("merge", sid)
        assert doc["how"] == ("merge" if moved else "fast-forward"), doc
        assert doc["committed_work"] and sorted(doc["files"]) == ["README", f"b{moved}.txt",
                                                                  f"late{moved}.txt"]
        assert (repo / "README").read_text() == f"edited after the run ({moved})\n"
        assert (repo / f"late{moved}.txt").read_text() == "late\n"
        assert git(repo, "status", "--porcelain") == "" and git(tree, "status", "--porcelain") == ""


def test_a_merge_of_work_already_on_the_branch_is_up_to_date_and_exits_0(zap, repo):
    """As `git merge` says "Already up to date." and exits 0, a re-run merge
    (a script that merges again, or work merged by hand) is not a failure:
    exit 0, a line saying so, nothing changed; `--json` says `merged: false`,
    `outcome: up_to_date`."""
    sid = _done(zap, f"echo a > a.txt && git add a.txt && {COMMIT} a")
    assert zap("merge", sid).returncode == 0
    head = git(repo, "rev-parse", "HEAD")
    again = zap("merge", sid)
    assert again.returncode == 0, (again.returncode, again.err)
    assert f"{sid}: nothing to merge, main already has all of it" in again.out, again.out
    assert again.err == ""
    doc = zap.json("merge", "--squash", sid)
    assert doc["merged"] is False and doc["outcome"] == "up_to_date", doc
    assert doc["commit"] == doc["previous"] == head and doc["files"] == []
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == ""
    merged = [r for r in map(__import__("json").loads, zap.trail(sid).read_text().splitlines())
              if r["type"] == "merged"]
    assert len(merged) == 1  # an up-to-date merge records nothing


def test_a_plain_merge_after_a_squash_is_up_to_date_not_an_empty_merge_commit(zap, repo):
    """New user (round 4): `merge --squash ID` then `merge ID` made a merge commit
    that changed no file ("merged (a merge commit), 0 files changed"). The
    squash already landed every change: up to date, exit 0, nothing moves."""
    sid = _done(zap, f"echo s > s.txt && git add s.txt && {COMMIT} s")
    assert zap("merge", "--squash", sid).returncode == 0
    head = git(repo, "rev-parse", "HEAD")
    for how in ((), ("--rebase",)):
        again = zap("merge", *how, sid)
        assert again.returncode == 0 and "already has all of it" in again.out, (again.out, again.err)
    assert git(repo, "rev-parse", "HEAD") == head
