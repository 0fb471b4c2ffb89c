"""What `zapcli merge` asks git (issue 32: held near git's own merge time),
and that asking less keeps every answer: one `git rev-list --parents`
tells the commits on the checkout's branch since the base and whether the
merge is a fast-forward (`zapcli.worktrees.merge.ancestry`) — for work
that merged the branch in, work rebased onto it, and a branch put back
before the base alike. Every git zapcli starts is counted by a `git` of
the test's, first on PATH, that logs its subcommand and runs the real one."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.parallel.conftest import git

COMMIT = "git -c user.email=s@s -c user.name=s commit -qm"


def _done(zap, cmd: str) -> str:
    sid = zap.spawn_sh(cmd, "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode == 0, zap("poll", sid).out
    return sid


def _main_moves(repo: Path, name: str) -> None:
    (repo / name).write_text(f"{name} on main\n")
    git(repo, "add", name)
    git(repo, "commit", "-qm", f"main: {name}")


def _counting_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose first `git` logs each subcommand, then runs the real git."""
    real = shutil.which("git")
    assert real
    folder, log = tmp_path / "counting-bin", tmp_path / "git-calls.log"
    folder.mkdir()
    shim = folder / "git"
    shim.write_text("#!/bin/sh\n"
                    "for a; do case $a in -*) ;; *) echo \"$a\" >> " f"'{log}'" "; break;; esac; "
                    "done\n"
                    f"exec '{real}' \"$@\"\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


def _calls(log: Path) -> list[str]:
    calls = sorted(log.read_text().split()) if log.exists() else []
    log.unlink(missing_ok=True)
    return [c for c in calls if c != "config"]  # the drivers' question, kept once asked


def test_a_merge_asks_git_once_for_each_thing(zap, repo, tmp_path):
    """A merge commit of a clean tree: the tree's status, the checkout, one
    listing for the count and the fast-forward question (a count and a
    `merge-base --is-ancestor` before), the merge, its commit, the paths it
    changes, and git's move of the checkout. A fast-forward: the status, the
    checkout, the paths, the move."""
    env, log = _counting_git(tmp_path)
    ff = _done(zap, f"echo a > a.txt && git add a.txt && {COMMIT} a")
    moved = _done(zap, f"echo b > b.txt && git add b.txt && {COMMIT} b")
    _calls(log)
    assert zap("merge", ff, env=env).returncode == 0
    assert _calls(log) == ["diff-tree", "merge", "rev-parse", "status"]
    doc = zap.json("merge", moved, env=env)
    assert doc["how"] == "merge" and doc["stale"]["commits_since_base"] == 1, doc
    assert _calls(log) == ["commit-tree", "diff-tree", "merge", "merge-tree", "rev-list",
                           "rev-parse", "status"]


def test_work_that_merged_the_branch_in_counts_every_commit_since_the_base(zap, repo):
    """The work took main's first two commits since its base (`git merge
    main` in its tree), then main moved once more: all three are main's
    since the base, as `git rev-list --count BASE..main` says; the merge is
    a merge commit holding both sides."""
    sid = zap.spawn_sh(f"sleep 2 && echo w > w.txt && git add w.txt && {COMMIT} w && "
                       "git -c user.email=s@s -c user.name=s merge -q --no-edit main",
                       "--worktree")
    base = git(repo, "rev-parse", "HEAD")
    _main_moves(repo, "one.txt")
    _main_moves(repo, "two.txt")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    _main_moves(repo, "three.txt")
    assert git(repo, "rev-list", "--count", f"{base}..HEAD") == "3"
    doc = zap.json("merge", sid)
    assert doc["how"] == "merge" and doc["stale"]["commits_since_base"] == 3, doc
    assert sorted(doc["files"]) == ["w.txt"]
    for name in ("w.txt", "one.txt", "two.txt", "three.txt"):
        assert (repo / name).exists()
    assert git(repo, "status", "--porcelain") == ""


def test_work_rebased_onto_the_moved_branch_is_a_fast_forward(zap, repo):
    """main moved, and the work was rebased onto it in its tree: main is an
    ancestor of the work though not its base — a fast-forward, no merge
    commit."""
    sid = zap.spawn_sh(f"sleep 2 && echo w > w.txt && git add w.txt && {COMMIT} w && "
                       "git -c user.email=s@s -c user.name=s rebase -q main", "--worktree")
    _main_moves(repo, "one.txt")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    tip = git(repo, "rev-parse", f"zapcli/{sid}")
    doc = zap.json("merge", sid)
    assert doc["how"] == "fast-forward" and doc["commit"] == tip, doc
    assert doc["stale"]["commits_since_base"] == 1
    assert git(repo, "rev-parse", "HEAD") == tip


def test_a_branch_put_back_before_the_base_is_a_fast_forward(zap, repo):
    """main put back to a commit before the tree's base: no commit of main's
    is past the base (the listing does not hold main's HEAD, so git is asked
    whether it is the work's ancestor: it is) — a fast-forward."""
    first = git(repo, "rev-parse", "HEAD")
    _main_moves(repo, "later.txt")
    sid = _done(zap, f"echo w > w.txt && git add w.txt && {COMMIT} w")
    git(repo, "reset", "-q", "--hard", first)
    doc = zap.json("merge", sid)
    assert doc["how"] == "fast-forward" and doc["stale"]["commits_since_base"] == 0, doc
    assert (repo / "later.txt").exists() and (repo / "w.txt").exists()


def _git_that(tmp_path: Path, script: str, monkeypatch) -> None:
    """A `git` first on PATH that runs `script` (sh) instead of git."""
    folder = tmp_path / "fake-bin"
    folder.mkdir(exist_ok=True)
    fake = folder / "git"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_the_runner_gives_gits_answer_and_still_ends_a_git_past_its_timeout(
        tmp_path, monkeypatch):
    """git's runner waits for git's end through a pidfd, not Python's polling
    sleeps: git's output, its error and its exit code come back as before,
    a git that outlives its output is waited for, and one past its timeout
    is ended (the process is gone) with an error saying so."""
    import time

    import psutil

    from zapcli.worktrees import git as g

    place = g.Place(str(tmp_path), str(tmp_path / ".git"), str(tmp_path / ".git"))
    _git_that(tmp_path, 'echo "out $*"; echo err >&2; exec >&- 2>&-; sleep 0.3; exit 3',
              monkeypatch)
    started = time.monotonic()
    proc = g.git(["version"], place, check=False)
    assert time.monotonic() - started >= 0.3
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out --no-pager version\n", "err\n")
    pids = tmp_path / "pids"
    _git_that(tmp_path, f"echo $$ > '{pids}'; exec sleep 30", monkeypatch)
    started = time.monotonic()
    with pytest.raises(g.GitError, match="could not run"):
        g.git(["version"], place, timeout=0.5)
    assert time.monotonic() - started < 10
    assert not psutil.pid_exists(int(pids.read_text())) or \
        psutil.Process(int(pids.read_text())).status() == psutil.STATUS_ZOMBIE


def test_the_runner_sees_a_git_end_the_moment_it_ends(tmp_path, monkeypatch):
    """A git that ends a while after closing its output (as a status does,
    writing the index) is seen ended at once: Python's own wait with a
    timeout looks again only after sleeping 0.5 ms, then twice as long each
    time (up to 50 ms), so a git ending 64 ms after its output was seen
    ~50 ms late."""
    import time

    from zapcli.worktrees import git as g

    place = g.Place(str(tmp_path), str(tmp_path / ".git"), str(tmp_path / ".git"))
    stamp = tmp_path / "ended"
    _git_that(tmp_path, f"exec >&- 2>&-; sleep 0.064; date +%s.%N > '{stamp}'", monkeypatch)
    lags = []
    for _ in range(3):
        g.git(["version"], place)
        lags.append(time.time() - float(stamp.read_text()))
    assert min(lags) < 0.025, lags


def test_ancestry_answers_as_git_does_and_tells_nothing_past_its_listing(tmp_path, monkeypatch):
    """The walk's answers are git's own (`rev-list --count`, `merge-base
    --is-ancestor`), for a branch that moved and work that took part of it;
    past `LISTED` commits it tells nothing (the callers ask git)."""
    from zapcli.worktrees import git as g
    from zapcli.worktrees import merge as gm

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    _main_moves(repo, "base.txt")
    base = git(repo, "rev-parse", "HEAD")
    for name in ("one.txt", "two.txt"):
        _main_moves(repo, name)
    git(repo, "checkout", "-q", "-b", "work", base)
    _main_moves(repo, "w.txt")
    git(repo, "merge", "-q", "--no-edit", "main~1")  # the work took main's first commit
    git(repo, "checkout", "-q", "main")
    _main_moves(repo, "three.txt")
    head, work = git(repo, "rev-parse", "main"), git(repo, "rev-parse", "work")
    place = g.Place(str(repo), str(repo / ".git"), str(repo / ".git"))

    def is_ancestor(a: str, b: str) -> bool:
        return gm.is_ancestor(place, a, b)

    known = gm.ancestry(place, base, head, work)
    assert known.since_base == int(git(repo, "rev-list", "--count", f"{base}..{head}")) == 3
    assert known.descends == is_ancestor(head, work)
    known = gm.ancestry(place, base, work, work)  # a branch that is the work itself
    assert known.since_base == int(git(repo, "rev-list", "--count", f"{base}..{work}")) == 3
    assert known.descends is True
    known = gm.ancestry(place, base, base, work)  # one put back to the base: git is asked
    assert (known.since_base, known.descends) == (0, None)
    monkeypatch.setattr(gm, "LISTED", 2)
    assert gm.ancestry(place, base, head, work) == gm.Ancestry()
