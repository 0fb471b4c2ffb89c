"""A folder a subagent wrote never supplies a library to a program zapcli
runs itself.

The dynamic loader reads an empty `LD_LIBRARY_PATH` entry (what `export
LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/cuda/lib64` makes of an unset one) or
a relative one as the folder a program starts in. zapcli runs `git` in a
subagent's tree (`diff`, `poll`, `merge`) and starts `bwrap` in a
subagent's folder: a `libz.so.1` or `libpcre2-8.so.0` that a sandboxed
subagent wrote there was loaded by them, unsandboxed, with the user's keys
(an adversary's review; the class of the `PATH` and `PYTHONPATH` entries,
`test_exec_path.py`). The outside effect: a file the planted library's
constructor writes when any program loads it; and the work still gets the
caller's `LD_LIBRARY_PATH` as set. Real gcc, git, bubblewrap.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.sandbox.conftest import needs_bwrap

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = [needs_bwrap, pytest.mark.timeout(180),
              pytest.mark.skipif(CC is None, reason="no C compiler here to build a library")]

PLANTED = ("libz.so.1", "libpcre2-8.so.0")  # git and bwrap each need one of them
SHIM = r'''
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
    char path[4096], exe[512] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = 0;
    const char *base = exe;
    for (const char *p = exe; *p; p++) if (*p == '/') base = p + 1;
    snprintf(path, sizeof path, "%s/loaded-by-%s-%d", OUTSIDE, base, (int)getpid());
    close(open(path, O_CREAT | O_WRONLY, 0600));
}
'''


def _library(into: Path, outside: Path) -> Path:
    src = into / "shim.c"
    src.write_text(SHIM)
    lib = into / "shim.so"
    subprocess.run([CC, "-shared", "-fPIC", f'-DOUTSIDE="{outside}"', "-o", str(lib), str(src)],
                   check=True, capture_output=True)
    return lib


def _zapcli(zap, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zapcli", *args], cwd=zap.cwd, env={**zap.env, **env},
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_an_empty_library_path_entry_never_loads_a_library_planted_in_a_tree(zap, outside):
    shim = _library(zap.cwd.parent, outside)
    (zap.cwd / "vendor").mkdir()
    shutil.copy(shim, zap.cwd / "vendor" / "shim.so")  # in the tree: what the subagent copies
    (zap.cwd / "README").write_text("base\n")
    git(zap.cwd, "init", "-q", "-b", "main")
    git(zap.cwd, "add", "README", "vendor")
    git(zap.cwd, "commit", "-q", "-m", "base")
    plant = " && ".join(f"cp vendor/shim.so {name}" for name in PLANTED)
    sid = zap.spawn_sh(f"echo change > README && {plant}", "--worktree", "--sandbox")
    assert zap("wait", "--timeout", "60", sid).returncode == 0, zap("output", "--stderr", sid).out
    tree = Path(zap.json("poll", "--no-wait", sid)["subagents"][0]["worktree"]["path"])
    assert (tree / PLANTED[0]).exists()  # the planted library is in the tree
    env = {"LD_LIBRARY_PATH": "/nonexistent/lib:"}
    ran = [(args, _zapcli(zap, *args, env=env)) for args in (["poll", "--no-wait", sid], ["diff", sid])]
    # a runner, and bwrap, started in the tree: another subagent there
    spawned = _zapcli(zap, "spawn", "--cli", "sh", "--sandbox", "--cwd", str(tree), "--",
                      'printf "%s" "$LD_LIBRARY_PATH"', env=env)
    assert spawned.returncode == 0, spawned.stderr
    other = spawned.stdout.strip()
    done = _zapcli(zap, "wait", "--timeout", "60", other, env=env)
    loaded = sorted(p.name.rsplit("-", 1)[0] for p in outside.iterdir())
    assert loaded == [], [(a, r.returncode, r.stderr[-300:]) for a, r in ran]
    assert all(r.returncode == 0 for _, r in ran), [(a, r.stderr[-300:]) for a, r in ran]
    assert done.returncode == 0, done.stdout + zap("output", "--stderr", other).out
    assert zap("output", other).out == env["LD_LIBRARY_PATH"]  # the work gets the caller's, as set
