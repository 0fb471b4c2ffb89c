"""`zapcli merge` stopped at the worst moment (issue 28, the chaos round): a
Ctrl-C or a SIGKILL to the merge's process group while git moves the
checkout's files, and a SIGKILL of that git itself. A merge happens whole or
leaves the checkout exactly as it was, says which, and a retry is truthful.

Real processes, real signals, real git: the signal is sent the moment git
takes the checkout's `index.lock` (plus a random few milliseconds), the
moment that left ~600 files half-merged before."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from tests.conftest import trail_records, wait_until
from tests.parallel.conftest import git

FILES = 600
TRIALS = int(os.environ.get("ZAPCLI_CHAOS_TRIALS") or 10)  # more for a measurement
COMMIT = "git -c user.email=s@s -c user.name=s commit -qm"


def _setup(zap, repo: Path) -> tuple[str, str, str]:
    """A checkout of FILES files and a finished subagent that changed them all
    (committed on its branch): (its id, the checkout's base, the work's commit)."""
    body = "x" * 20000
    for i in range(FILES):
        (repo / f"f{i:03}.txt").write_text(f"{i} base\n{body}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "files")
    base = git(repo, "rev-parse", "HEAD")
    sid = zap.spawn_sh(f"for f in f*.txt; do echo changed >> $f; done && git add -A && "
                       f"{COMMIT} work", "--worktree")
    assert zap("wait", "--timeout", "60", sid).returncode == 0, zap("poll", sid).out
    work = git(repo, "rev-parse", f"zapcli/{sid}")
    return sid, base, work


def _state(repo: Path, base: str, work: str) -> str:
    """"merged" (HEAD at the work, every file the work's, clean), "unchanged"
    (HEAD at the base, every file the base's, clean), or what is wrong."""
    head = git(repo, "rev-parse", "HEAD")
    lock = (repo / ".git" / "index.lock").exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                            text=True).stdout.strip()
    texts = [(repo / f"f{i:03}.txt") for i in range(FILES)]
    missing = sum(1 for f in texts if not f.exists())
    changed = sum(1 for f in texts if f.exists() and "changed" in f.read_text())
    if head == work and changed == FILES and not status and not lock:
        return "merged"
    if head == base and changed == 0 and not missing and not status and not lock:
        return "unchanged"
    return (f"half: HEAD {'work' if head == work else 'base' if head == base else head}, "
            f"{changed} files changed, {missing} missing, index.lock {lock}, status {len(status.splitlines())} lines")


def _start(zap, sid: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "zapcli", "merge", sid], cwd=zap.cwd,
                            env=zap.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # a group of its own, as at a terminal


def _when_locked(repo: Path, proc: subprocess.Popen, act) -> bool:
    """Call `act()` a random 0-30 ms after git takes the checkout's index.lock
    (or when the merge ends without it); whether the lock was seen."""
    lock = repo / ".git" / "index.lock"
    while proc.poll() is None:
        if lock.exists():
            time.sleep(random.uniform(0, 0.03))
            act()
            return True
        time.sleep(0.0005)
    return False


def _gits(pid: int) -> list[psutil.Process]:
    """The git processes below `pid` (the merge's own session or its git's)."""
    out = []
    for p in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if p.name() == "git":
                out.append(p)
    return out


def _settle(repo: Path) -> None:
    """Whatever git outlived the signal has finished (at most 20 s)."""
    def quiet() -> bool:
        for p in psutil.process_iter(["name", "cwd"]):
            try:
                if p.info["name"] == "git" and p.info["cwd"] == str(repo):
                    return False
            except psutil.Error:
                continue
        return True
    wait_until(quiet, 20, 0.05)


def _reset(repo: Path, base: str) -> None:
    (repo / ".git" / "index.lock").unlink(missing_ok=True)
    git(repo, "reset", "-q", "--hard", base)


def _trials(zap, repo: Path, n: int, sig: int) -> list[str]:
    sid, base, work = _setup(zap, repo)
    random.seed(28 + sig)
    results = []
    for _ in range(n):
        proc = _start(zap, sid)
        _when_locked(repo, proc, lambda pid=proc.pid: os.killpg(pid, sig))
        out, err = proc.communicate(timeout=60)
        _settle(repo)
        state = _state(repo, base, work)
        said = err.decode(errors="replace")
        if state == "merged" and "interrupted" in said and "finished" not in said:
            state = f"merged but reported interrupted: {said.strip()}"
        if state == "unchanged" and proc.returncode == 0:
            state = "reported merged but unchanged"
        results.append(state)
        again = zap("merge", sid)
        if state == "merged":  # a retry says it is merged, not that nothing changed
            assert "the checkout is unchanged" not in again.err, again.err
        _reset(repo, base)
    return results


def test_a_merge_interrupted_by_ctrl_c_is_whole_or_not_at_all(zap, repo):
    results = _trials(zap, repo, TRIALS, signal.SIGINT)
    bad = [r for r in results if r not in ("merged", "unchanged")]
    assert not bad, f"{len(bad)} of {len(results)} half-merged or misreported: {results}"


def test_a_merge_whose_group_is_sigkilled_is_whole_or_not_at_all(zap, repo):
    results = _trials(zap, repo, TRIALS, signal.SIGKILL)
    bad = [r for r in results if r not in ("merged", "unchanged")]
    assert not bad, f"{len(bad)} of {len(results)} half-merged or misreported: {results}"


def test_a_merge_whose_git_is_sigkilled_is_undone_by_the_next_merge(zap, repo):
    """git itself killed while it writes the files (the OOM killer, a kill -9
    of the wrong pid): the next `zapcli merge` finds the checkout as the
    interrupted merge left it, puts it back as it was, says so, and merges."""
    sid, base, work = _setup(zap, repo)
    random.seed(2809)
    for _ in range(max(TRIALS // 2, 5)):
        proc = _start(zap, sid)

        def kill_all(proc: subprocess.Popen = proc) -> None:
            gits = _gits(proc.pid)  # zapcli first: it must not see its git die
            os.killpg(proc.pid, signal.SIGKILL)
            for p in gits:
                with contextlib.suppress(psutil.Error):
                    p.kill()

        seen = _when_locked(repo, proc, kill_all)
        proc.communicate(timeout=60)
        _settle(repo)
        again = zap("merge", sid)
        assert again.returncode == 0, (seen, again.err)
        assert _state(repo, base, work) == "merged", again.err
        if seen:
            assert "was stopped while git moved" in again.out + again.err, again.out
        _reset(repo, base)


def test_a_merge_whose_git_alone_is_killed_puts_the_checkout_right_itself(zap, repo):
    """Only git is killed (the OOM killer's choice), zapcli lives on: it
    finds git killed — not an answer — and puts the checkout right before it
    ends (as it was, or finished when git had moved the branch), saying so;
    nothing is left for the next merge to repair. Before, it took the killed
    git for a refusal, dropped its journal and left a half-moved checkout
    and git's `index.lock` behind."""
    sid, base, work = _setup(zap, repo)
    random.seed(3210)
    for _ in range(max(TRIALS // 2, 4)):
        proc = _start(zap, sid)

        def kill_git(proc: subprocess.Popen = proc) -> None:
            for p in _gits(proc.pid):
                with contextlib.suppress(psutil.Error):
                    p.kill()

        seen = _when_locked(repo, proc, kill_git)
        _out, err = proc.communicate(timeout=60)
        _settle(repo)
        state = _state(repo, base, work)
        said = err.decode(errors="replace")
        assert state in ("merged", "unchanged"), (seen, state, said)
        assert (state == "merged") == (proc.returncode == 0), (state, proc.returncode, said)
        if state == "unchanged":
            assert "git was killed" in said and "put back exactly as it was" in said, said
        again = zap("merge", sid)
        assert again.returncode == 0 and _state(repo, base, work) == "merged", again.err
        assert "was stopped while git moved" not in again.out + again.err, again.err
        _reset(repo, base)


def test_a_merge_is_not_reported_interrupted_once_the_checkout_moved(zap, repo):
    """A Ctrl-C that lands just after git moved the checkout: the merge is
    reported done (exit 0), never "interrupted"."""
    sid, base, work = _setup(zap, repo)
    for delay in (0.0, 0.01, 0.03, 0.06):
        proc = _start(zap, sid)
        lock = repo / ".git" / "index.lock"
        seen = threading.Event()

        def watch(proc: subprocess.Popen = proc, lock: Path = lock, delay: float = delay,
                  seen: threading.Event = seen) -> None:
            while proc.poll() is None:
                if lock.exists():
                    seen.set()
                elif seen.is_set():  # git let go of it: the checkout has moved
                    time.sleep(delay)
                    with contextlib.suppress(ProcessLookupError):  # it may have ended meanwhile
                        os.killpg(proc.pid, signal.SIGINT)
                    return
                time.sleep(0.0005)

        t = threading.Thread(target=watch)
        t.start()
        out, err = proc.communicate(timeout=60)
        t.join()
        _settle(repo)
        state = _state(repo, base, work)
        assert state == "merged", state
        assert proc.returncode == 0, (delay, err.decode())
        _reset(repo, base)


def test_git_run_alone_gives_its_output_and_code_and_a_timeout_leaves_it_running(tmp_path):
    """The runner of the move (`zapcli.worktrees.git._alone`): waited on
    through a pidfd since issue 32, its output read from files with no name;
    git's output and exit code come back whole, and past the timeout git is
    left running (it must not be stopped halfway) and named."""
    from zapcli.worktrees import git as g

    env = {**os.environ, "LC_ALL": "C"}
    done = g._alone(["version"], str(tmp_path), env, 30, ())
    assert done.returncode == 0 and done.stdout.startswith("git version") and done.stderr == ""
    failed = g._alone(["no-such-command"], str(tmp_path), env, 30, ())
    assert failed.returncode == 1 and "is not a git command" in failed.stderr
    marker = tmp_path / "finished"
    slow = ["-c", f"alias.slow=!sleep 2 && touch {marker}", "slow"]
    try:
        g._alone(slow, str(tmp_path), env, 0.3, ())
        raise AssertionError("no timeout")
    except g.GitError as exc:
        assert "did not finish in 0s; it goes on (pid " in exc.message
        pid = int(exc.message.rsplit("pid ", 1)[1].rstrip(")"))
    assert psutil.pid_exists(pid)
    wait_until(marker.exists, 30, 0.1)  # it went on to its end


def test_a_merge_killed_after_git_moved_the_branch_is_recorded_by_the_retry(zap, repo):
    """zapcli killed in the moment after its git had moved the branch and
    before the merge was recorded (full run 21 caught it: the retry said
    "nothing to merge" and failed): the retry finishes that merge — the
    checkout whole, the merge recorded — and says what happened. The state
    is made as the kill leaves it: the move's journal (written before git
    starts), git's fast-forward done, no `merged` record."""
    import json

    from zapcli.worktrees import move

    sid, base, work = _setup(zap, repo)
    changed = [f"f{i:03}.txt" for i in range(FILES)]
    journal = repo / ".git" / move.JOURNAL
    journal.write_text(json.dumps({
        "pid": 1, "started": time.time(), "ref": "refs/heads/main", "from": base, "to": work,
        "added": [], "deleted": [], "changed": changed,
        "owner": {"sid": sid, "how": "fast-forward"}}))
    git(repo, "merge", "--ff-only", "-q", work)
    assert not any(r.get("type") == "merged" for r in trail_records(zap.trail(sid)))
    again = zap("merge", sid)
    assert again.returncode == 0, again.err
    assert _state(repo, base, work) == "merged"
    assert "was stopped while git moved" in again.out + again.err, again.out
    merged = [r for r in trail_records(zap.trail(sid)) if r.get("type") == "merged"]
    assert len(merged) == 1 and merged[0]["commit"] == work and merged[0]["previous"] == base
    assert not journal.exists()
    other = zap("merge", sid)  # and from then on it is merged, as any merged subagent
    assert other.returncode == 0 and "nothing to merge" in other.out  # up to date, as git says


def test_a_merge_killed_before_its_git_started_leaves_the_persons_later_edits(zap, repo):
    """zapcli killed between writing its journal and starting git (or git
    killed before it took the index): nothing was moved. The person then
    edits a file the merge would have changed; the next merge must not
    "put back" that file (it rewrote it from the commit, the edit lost): git
    had written nothing — no `index.lock` left, the index as the old commit
    has it — so the files are the person's. The merge then meets the edit
    as any uncommitted change in its way. The state is made as the kill
    leaves it: the journal, nothing else."""
    import json

    from zapcli.worktrees import move

    sid, base, work = _setup(zap, repo)
    (repo / ".git" / move.JOURNAL).write_text(json.dumps({
        "pid": 1, "started": time.time(), "ref": "refs/heads/main", "from": base, "to": work,
        "added": [], "deleted": [], "changed": [f"f{i:03}.txt" for i in range(FILES)],
        "owner": {"sid": sid, "how": "fast-forward"}}))
    (repo / "f007.txt").write_text("the person's edit\n")
    again = zap("merge", sid)
    assert (repo / "f007.txt").read_text() == "the person's edit\n", again.err
    assert git(repo, "rev-parse", "HEAD") == base
    assert again.returncode == 1 and "f007.txt" in again.err, again.err
