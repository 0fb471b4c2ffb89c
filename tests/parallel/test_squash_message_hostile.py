"""adv11: `merge --squash` writes the branch's commit messages into the squash
commit's message. A subagent chooses those messages; whatever it writes there
must not keep its work from merging (nor make the merge say what did not happen)."""

from __future__ import annotations

from tests.parallel.conftest import git
from tests.parallel.test_merge import _done


def test_a_huge_commit_message_still_squashes(zap, repo):
    # one argument of git's argv holds at most 128 KiB on Linux (MAX_ARG_STRLEN)
    big = "python3 -c \"print('why ' * 40000)\" > msg.txt"
    sid = _done(zap, f"echo work > w.txt; git add w.txt; {big}; "
                     "git -c user.email=s@s -c user.name=s commit -q -F msg.txt; rm msg.txt")
    before = git(repo, "rev-parse", "HEAD")
    proc = zap("merge", "--squash", sid)
    assert proc.returncode == 0, proc.err
    assert git(repo, "rev-parse", "HEAD") != before
    assert (repo / "w.txt").read_text() == "work\n"
    assert git(repo, "log", "-1", "--format=%B").startswith("why why")
