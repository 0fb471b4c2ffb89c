"""`spawn --worktree` (docs/explanation/rules.md#parallel-coding) against `git worktree add` alone, same run.

Usage: .venv/bin/python tests/bench/bench_worktree.py [--runs 7] [--files 10000]

Builds a repository of N files (one commit) and, round-robin:
- reference: `git worktree add --no-track -b B PATH HEAD` (what any tool pays);
- `zapcli spawn --cli sh --worktree -- true`: the time until `spawn` returns
  (the id), and the time until the tree is ready — the runner's `worktree`
  record, written once `git worktree add` finished inside it. The second is
  the figure comparable to the reference (goal ≤ 1.2×).
Then eight `spawn --worktree` started at the same instant: the time until
all eight are running with their tree ready, against the sum of their own
`git worktree add` times (zapcli serializes creations per repository, so
that sum is the floor) and against 8 x the reference. Each tree is removed (untimed) after its round.

Then `zapcli merge` against `git merge` alone (goal ≤ 1.2×): one subagent's
committed work (12 files changed) merged into the checkout's branch, which
has moved since the base (a merge commit either way), round-robin with
`git merge --no-edit` of the same branch; the checkout is reset (untimed)
after each. Also the fast-forward case (the branch has not moved). And the
same `zapcli merge` by the package as `--against REF` has it (default
`main`, built with `git archive`), in the same rounds: the before/after
ratio of a change (issue 27's safe git runner: goal ≤ 1.0×, never worse).
Beside each it prints the floor — `zapcli session` (zapcli's start-up, no
work) plus git's own merge — and its ratio: when start-up alone is over
1.2× git's time, the goal is 1.5× (issue 32); what zapcli spends beyond
the floor is its own work. The load averages are printed first.

`--sandbox`: every subagent sandboxed, so its tree's git is fenced (its
objects in a folder of its own, brought into the repository verified when
its run ends): the cost of that fence against `--against REF`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _install

GIT = ["git", "-c", "user.email=b@b", "-c", "user.name=b"]
SPAWN = ["spawn", "--cli", "sh", "--worktree"]  # + --sandbox (--sandbox)


def _git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


def make_repo(root: Path, files: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    per_dir = 100
    for i in range(files):
        d = repo / f"pkg{i // per_dir:03d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i % per_dir:03d}.py").write_text(f"# module {i}\nVALUE = {i}\n" * 8)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "many files")
    return repo


GIT_MS: list[float] = []  # `git worktree add` inside zapcli's runner, as its record says


def ready_at(home: Path, sid: str, timeout: float = 120) -> float:
    """perf_counter time when the trail of `sid` got its `worktree` record."""
    trail = home / "subagents" / f"{sid}.jsonl"
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        try:
            for line in trail.read_bytes().split(b"\n"):
                if b'"type":"worktree"' in line:
                    rec = json.loads(line)
                    if not rec.get("ok"):
                        raise RuntimeError(f"{sid}: {rec.get('error')}")
                    GIT_MS.append(float(rec.get("ms") or 0) - float(rec.get("lock_wait_ms") or 0))
                    return time.perf_counter()
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    raise RuntimeError(f"{sid}: no worktree within {timeout}s")


def _zap(inst: _install.Install, repo: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(inst.zapcli(*args), cwd=repo, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return proc.stdout.strip()


def main() -> int:
    _install.ensure_venv()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--merge-only", action="store_true", help="only zapcli merge vs git merge")
    ap.add_argument("--sandbox", action="store_true",
                    help="spawn every subagent with --sandbox (its tree's git fenced: its own "
                         "object folder, brought in verified when the run ends)")
    ap.add_argument("--against", default="main", metavar="REF",
                    help="also time zapcli merge as this commit has it ('' for none)")
    opts = ap.parse_args()
    if opts.sandbox:
        SPAWN.append("--sandbox")
    inst = _install.build()
    before = _install.build("zapcli-bench-before-", ref=opts.against) if opts.against else None
    try:
        return _bench(inst, opts.runs, opts.files, opts.merge_only, before, opts.against)
    finally:
        inst.cleanup()
        if before is not None:
            before.cleanup()


def _bench(inst: _install.Install, runs: int, files: int, merge_only: bool = False,
           before: _install.Install | None = None, ref_name: str = "") -> int:
    t0 = time.perf_counter()
    repo = make_repo(inst.root, files)
    print(f"# repository of {files} files built in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    home = inst.new_home("wt")
    env = inst.env(home)
    if merge_only:
        _merge(inst, repo, env, runs, before, ref_name, home, files)
        return 0
    refs = inst.root / "ref-trees"
    n = [0]

    def git_alone() -> float:
        n[0] += 1
        path = refs / f"t{n[0]}"
        t = time.perf_counter()
        _git(repo, "worktree", "add", "--no-track", "-q", "-b", f"ref/{n[0]}", str(path), "HEAD")
        took = time.perf_counter() - t
        _git(repo, "worktree", "remove", "--force", str(path))
        return took

    spawn_returned: list[float] = []

    def zap_ready() -> float:
        t = time.perf_counter()
        sid = _zap(inst, repo, env, *SPAWN, "--", "true")
        spawn_returned.append(time.perf_counter() - t)
        took = ready_at(home, sid) - t
        _zap(inst, repo, env, "wait", sid)
        _zap(inst, repo, env, "worktree", "rm", sid)
        return took

    got = _install.interleaved(runs, {"git": git_alone, "zapcli": zap_ready}, warmup=1)
    overhead = [r * 1000 - g for r, g in zip(got["zapcli"], GIT_MS[1:], strict=True)]
    ref = _install.median_ms(got["git"])
    ready = _install.median_ms(got["zapcli"])
    returned = _install.median_ms(spawn_returned[1:])
    print(f"git worktree add alone ({files} files): {ref:.0f} ms")
    print(f"spawn --worktree, until spawn returns: {returned:.0f} ms ({_install.fmt_ratio(returned, ref)})")
    print(f"spawn --worktree, until the tree is ready: {ready:.0f} ms ({_install.fmt_ratio(ready, ref)})")
    print(f"  of which zapcli's own part (spawn, runner start-up, lock; the rest is its git "
          f"worktree add): {sorted(overhead)[len(overhead) // 2]:.0f} ms")
    _eight(inst, repo, env, home, ref)
    _merge(inst, repo, env, runs, before, ref_name, home, files)
    return 0


WORK = ("for d in 001 002 003 004 005 006 007 008 009 010; do echo changed >> pkg$d/mod001.py; done; "
        "echo new > added1.txt; echo new > added2.txt; git add -A; "
        "git -c user.email=b@b -c user.name=b commit -qm 'the work'")


def _merge(inst: _install.Install, repo: Path, env: dict[str, str], runs: int,
           before: _install.Install | None = None, ref: str = "", home: Path | None = None,
           files: int = 10000) -> None:
    """`zapcli merge ID` vs `git merge` of the same branch, from the same start
    (and vs `zapcli merge` as `ref` has it, with `before`)."""
    old_env = before.env(home) if before is not None else {}
    print("# load averages: " + " ".join(f"{x:.2f}" for x in os.getloadavg()), file=sys.stderr)
    sid = _zap(inst, repo, env, *SPAWN, "--", WORK)
    _zap(inst, repo, env, "wait", sid)
    branch = f"zapcli/{sid}"
    listed = subprocess.run([*GIT, "worktree", "list", "--porcelain"], cwd=repo, check=True,
                            capture_output=True, text=True).stdout
    tree = next(line.split(" ", 1)[1] for line in listed.splitlines()
                if line.startswith("worktree ") and line.endswith(sid))
    for moved in (True, False):
        start = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                               text=True, check=True).stdout.strip()
        if moved:  # the checkout's branch moved on since the base: a real merge
            (repo / "pkg099" / "mod099.py").write_text("# moved on\n")
            _git(repo, "commit", "-qam", "main moved")
            start = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                                   text=True, check=True).stdout.strip()

        def git_merge(start: str = start) -> float:
            t = time.perf_counter()
            _git(repo, "merge", "-q", "--no-edit", branch)
            took = time.perf_counter() - t
            _git(repo, "reset", "-q", "--hard", start)
            return took

        def zap_merge(start: str = start) -> float:
            t = time.perf_counter()
            _zap(inst, repo, env, "merge", sid)
            took = time.perf_counter() - t
            _git(repo, "reset", "-q", "--hard", start)
            return took

        def old_merge(start: str = start) -> float:
            assert before is not None
            t = time.perf_counter()
            _zap(before, repo, old_env, "merge", sid)
            took = time.perf_counter() - t
            _git(repo, "reset", "-q", "--hard", start)
            return took

        def start_up() -> float:  # what any zapcli command costs before its own work
            t = time.perf_counter()
            _zap(inst, repo, env, "session")
            return time.perf_counter() - t

        def tree_status() -> float:  # what finding uncommitted work in its tree costs git
            t = time.perf_counter()
            subprocess.run(["git", "status", "--porcelain=v2", "--branch", "-z",
                            "--untracked-files=normal", "--ignore-submodules=all"],
                           cwd=tree, capture_output=True, check=True)
            return time.perf_counter() - t

        runners = {"git": git_merge, "zapcli": zap_merge, "start": start_up, "status": tree_status}
        if before is not None:
            runners["before"] = old_merge
        got = _install.interleaved(runs, runners, warmup=1)
        base, mine = _install.median_ms(got["git"]), _install.median_ms(got["zapcli"])
        what = "a merge commit (the branch moved)" if moved else "a fast-forward"
        print(f"zapcli merge vs git merge alone, {what}: {mine:.0f} ms vs {base:.0f} ms "
              f"({_install.fmt_ratio(mine, base)}; goal <= 1.2x)")
        if before is not None:
            old = _install.median_ms(got["before"])
            print(f"  zapcli merge, this tree vs {ref}: {mine:.0f} ms vs {old:.0f} ms "
                  f"({mine / old:.2f}x; goal <= 1.0x, never worse)")
        up = _install.median_ms(got["start"])
        floor = up + base  # zapcli's start-up, then git's own merge: nothing else
        goal = 1.2 if floor <= 1.2 * base else 1.5
        print(f"  the floor: zapcli's start-up (zapcli session, {up:.0f} ms) + git merge ({base:.0f} "
              f"ms) = {floor:.0f} ms ({_install.fmt_ratio(floor, base)}): start-up alone "
              + ("leaves room for 1.2x" if goal == 1.2 else
                 f"forbids 1.2x; the goal is 1.5x ({1.5 * base:.0f} ms)"
                 + ("" if floor <= 1.5 * base else ", which start-up alone forbids too")))
        status = _install.median_ms(got["status"])
        print(f"  zapcli's own work beyond the floor: {mine - floor:.0f} ms (reading its tree for "
              "uncommitted work, the checks, git merge-tree/commit-tree, the journal)")
        print(f"  of which git's status of the subagent's tree ({files} files; no merge may skip "
              f"it: work left uncommitted there is the merge's too): {status:.0f} ms; the floor "
              f"with it: {floor + status:.0f} ms ({_install.fmt_ratio(floor + status, base)})")
        if moved:
            _git(repo, "reset", "-q", "--hard", "HEAD~1")


def _eight(inst: _install.Install, repo: Path, env: dict[str, str], home: Path, ref_ms: float) -> None:
    GIT_MS.clear()
    t = time.perf_counter()
    procs = [subprocess.Popen(inst.zapcli(*SPAWN, "--", "sleep 5"),
                              cwd=repo, env=env, stdout=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL) for _ in range(8)]
    ids = [p.communicate(timeout=120)[0].strip() for p in procs]
    returned = time.perf_counter() - t
    all_ready = max(ready_at(home, sid) for sid in ids) - t
    inside = sum(GIT_MS)
    print(f"8 parallel spawn --worktree: all 8 ids printed after {returned * 1000:.0f} ms; all 8 "
          f"running in their trees after {all_ready * 1000:.0f} ms")
    print(f"  their 8 git worktree add, one after the other under the lock: {inside:.0f} ms in all "
          f"({_install.fmt_ratio(all_ready * 1000, inside)} of that); 8 x the reference above: "
          f"{8 * ref_ms:.0f} ms ({_install.fmt_ratio(all_ready * 1000, 8 * ref_ms)})")
    _zap(inst, repo, env, "wait", *ids)


if __name__ == "__main__":
    raise SystemExit(main())
