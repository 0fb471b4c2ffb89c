"""adv11: retention (`rm`, `clean`, `gc`) now asks git whether an ended
subagent's tree holds work (`lifecycle.retention.tree_work`). The tree is the
subagent's: whatever it wrote there (a `.git` file naming a git dir of its
own, with `core.fsmonitor` and hooks; attributes naming a filter) must not
make that look run a program, and a tree made to look clean must not let
another subagent's unmerged work go. (Held on 425490b: zapcli names the git
dir itself and refuses a tree whose `.git` moved; kept as a guard.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.parallel.test_merge import _done, _tree


def test_looking_at_a_hostile_tree_runs_nothing(zap, repo, tmp_path):
    hit = tmp_path / "hit"
    fake = ("mkdir -p fake/hooks fake/objects fake/refs/heads; cp -r \"$(git rev-parse --git-common-dir)/objects/.\" fake/objects/; "
            "echo \"ref: refs/heads/main\" > fake/HEAD; git rev-parse HEAD > fake/refs/heads/main; "
            f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {hit}.fsmonitor\\n"
            f"[filter \"evil\"]\\n\\tclean = touch {hit}.filter\\n' > fake/config; "
            f"printf '#!/bin/sh\\ntouch {hit}.hook\\n' > fake/hooks/post-index-change; chmod +x fake/hooks/*; "
            "echo '* filter=evil' > .gitattributes; echo draft > draft.txt; "
            "echo \"gitdir: $PWD/fake\" > .git")
    sid = _done(zap, fake)
    other = _done(zap, "echo unmerged > other.txt")
    for args in (("rm", sid), ("clean",), ("gc",), ("rm", other)):
        zap(*args)
    assert not list(tmp_path.glob("hit*"))
    # the other subagent's unmerged work is still where merge can reach it
    assert (_tree(zap, other) / "other.txt").read_text() == "unmerged\n"
    assert Path(_tree(zap, sid)).is_dir()
    # armed: the person's own `git status` in that tree runs what it names
    subprocess.run(["git", "status"], cwd=_tree(zap, sid), capture_output=True, timeout=60)
    assert list(tmp_path.glob("hit*"))
