"""`zapcli.sandbox.execonly`: the program an agent CLI runs from an
execute-only copy, so the commands it starts in the same sandbox (same user,
no capability) cannot reach into it. Real bubblewrap, real processes: a
sibling in the sandbox reads the copy's `/proc/<pid>/fd` — refused — and the
same program run from its readable original — allowed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

from tests.sandbox.conftest import FOUND, needs_bwrap
from zapcli.sandbox import execonly


def test_a_copy_is_execute_only_made_once_and_runs():
    sleep = os.path.realpath(shutil.which("sleep") or "/bin/sleep")
    first = execonly.copy(sleep)
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o111
    assert execonly.copy(sleep) == first  # one per version, made once
    assert subprocess.run([first, "0"], timeout=10).returncode == 0


def test_a_node_script_runs_under_a_copy_of_node(tmp_path):
    node = shutil.which("node")
    script = tmp_path / "cli.js"
    script.write_text("#!/usr/bin/env node\nconsole.log('hi')\n")
    argv, why = execonly.argv([str(script), "--x"], os.environ.get("PATH"))
    if node is None:
        assert why is not None and argv == [str(script), "--x"]
        return
    assert why is None and argv[1:] == [str(script), "--x"], (argv, why)
    assert os.path.dirname(argv[0]) == execonly.folder()
    assert subprocess.run(argv[:2], capture_output=True, timeout=30).stdout == b"hi\n"


@needs_bwrap
def test_a_sibling_in_the_sandbox_cannot_reach_into_the_copy_but_could_the_original():
    sleep = os.path.realpath(shutil.which("sleep") or "/bin/sleep")
    copy = execonly.copy(sleep)
    look = ('"$1" 5 & a=$!; "$2" 5 & b=$!; sleep 0.3; '
            'readlink /proc/$a/fd/0 >/dev/null 2>&1 && echo copy-reached; '
            'readlink /proc/$b/fd/0 >/dev/null 2>&1 && echo original-reached; kill $a $b')
    done = subprocess.run([FOUND.program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                           "--unshare-pid", "--cap-drop", "ALL", "sh", "-c", look, "sh", copy, sleep],
                          capture_output=True, text=True, timeout=30)
    assert "original-reached" in done.stdout, done  # the check itself sees what it should
    assert "copy-reached" not in done.stdout, done
