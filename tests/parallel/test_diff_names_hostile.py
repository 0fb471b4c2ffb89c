"""adv11: `zapcli diff ID --name-only` (and `--stat`) is for a pipe (`| xargs`,
`| while read`), and its subagent chose the file names. A name holding a
newline must not turn into two lines there, the second an absolute path of the
subagent's choosing: git quotes such a name ("a\\n/b"), and so does zapcli."""

from __future__ import annotations

import subprocess
import sys

from tests.parallel.conftest import git
from tests.parallel.test_merge import _done


def test_a_name_with_a_newline_is_one_quoted_line(zap, repo, tmp_path):
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("the person's file\n")
    # a tree file `x<newline><victim's absolute path>`: folders `x\n`, `tmp`, ...
    sid = _done(zap, f"d=\"x\n{victim.parent}\"; mkdir -p \"$d\"; echo w > \"$d/{victim.name}\"")
    names = subprocess.run(f"{sys.executable} -m zapcli diff {sid} --name-only | xargs rm -f", shell=True,
                           cwd=repo, env=zap.env, capture_output=True, text=True, timeout=60)
    assert victim.read_text() == "the person's file\n", names.stderr
    for option in ("--name-only", "--stat"):
        out = zap("diff", sid, option).out
        assert not any(line.strip().startswith(str(victim)) for line in out.splitlines())
    # what git itself prints for that name, byte for byte
    assert zap("diff", sid, "--name-only").out == _git_names(zap, sid)


def _git_names(zap, sid):
    tree = zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"]
    git(tree, "add", "-A")
    return subprocess.run(["git", "diff", "--cached", "--name-only", "HEAD"], cwd=tree,
                          capture_output=True, text=True, check=True).stdout
