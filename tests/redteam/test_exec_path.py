"""A folder a subagent wrote never supplies a program zapcli runs itself.

An empty PATH entry (what `export PATH=$X:$PATH` makes of an unset X) or a
relative one (`./node_modules/.bin`, common advice for JavaScript projects)
names whatever folder a lookup runs in. zapcli looks up `bwrap` when it
starts a subagent's runner in the subagent's folder, and runs `git` in a
subagent's tree for `diff`, `merge`, `poll`: a `bwrap` or `git` that a
sandboxed subagent wrote there ran unsandboxed, with the user's keys (an
adversary's review). The same class: a relative `PYTHONPYCACHEPREFIX`,
read from the folder a runner starts in (a planted `.pyc` of zapcli's own
modules). Each assertion is the outside effect: a file a planted program
writes when it runs; and the work still gets the caller's values as set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parallel.conftest import git
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(180)]


def _plant(folder: Path, outside: Path, *names: str) -> None:
    """`names` in `folder/node_modules/.bin` and in `folder` itself, each
    writing `outside/<name>` and then doing the real program's work."""
    for where in (folder / "node_modules" / ".bin", folder):
        where.mkdir(parents=True, exist_ok=True)
        for name in names:
            real = subprocess.run(["sh", "-c", f"command -v {name}"], capture_output=True,
                                  text=True).stdout.strip()
            prog = where / name
            prog.write_text(f'#!/bin/sh\n: > "{outside}/{name}"\nexec {real} "$@"\n')
            prog.chmod(0o755)


def _zapcli(zap, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zapcli", *args], cwd=cwd, env={**zap.env, **env},
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_a_relative_or_empty_path_entry_never_runs_a_planted_bwrap(zap, outside):
    work = zap.cwd / "w"
    _plant(work, outside, "bwrap")
    path = f"./node_modules/.bin::{os.environ['PATH']}"
    spawned = _zapcli(zap, "spawn", "--cli", "sh", "--sandbox", "--", 'printf "%s" "$PATH"',
                      cwd=work, env={"PATH": path})
    assert spawned.returncode == 0, spawned.stderr
    sid = spawned.stdout.strip()
    done = _zapcli(zap, "wait", "--timeout", "60", sid, cwd=work, env={"PATH": path})
    assert sorted(p.name for p in outside.iterdir()) == [], done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert zap("output", sid).out == path  # the work gets the caller's PATH as it was


def test_a_relative_path_entry_never_runs_a_git_planted_in_a_tree(zap, outside):
    git(zap.cwd, "init", "-q", "-b", "main")
    (zap.cwd / "README").write_text("base\n")
    git(zap.cwd, "add", "README")
    git(zap.cwd, "commit", "-q", "-m", "base")
    sid = zap.spawn_sh(f"echo change > README && mkdir -p node_modules/.bin && "
                       f"printf '#!/bin/sh\\n: > {outside}/git\\n' > node_modules/.bin/git && "
                       f"chmod +x node_modules/.bin/git && cp node_modules/.bin/git git",
                       "--worktree", "--sandbox")
    assert zap("wait", "--timeout", "60", sid).returncode == 0
    path = {"PATH": f"./node_modules/.bin::{os.environ['PATH']}"}
    ran = [(args, _zapcli(zap, *args, cwd=zap.cwd, env=path).returncode)
           for args in (["poll", "--no-wait", sid], ["diff", sid], ["worktree", "list"], ["merge", sid])]
    assert sorted(p.name for p in outside.iterdir()) == [], ran
    assert (zap.cwd / "README").read_text() == "change\n", ran  # the real git merged it


def test_a_relative_pycache_prefix_never_loads_a_planted_pyc_into_the_runner(zap, outside):
    """The runner starts in the subagent's folder: a relative prefix names a
    folder in it, and an unchecked-hash `.pyc` of zapcli's own `__init__`
    there would be loaded instead of the source."""
    import zapcli

    work = zap.cwd / "w"
    work.mkdir()
    prefix = "cache/pyc"
    source = Path(zapcli.__file__)
    planted = work / "plant.py"
    planted.write_text(f"open({str(outside / 'pyc')!r}, 'w').write('loaded')\n" + source.read_text())
    target = work / prefix / str(source.parent).lstrip("/") / f"__init__.{sys.implementation.cache_tag}.pyc"
    target.parent.mkdir(parents=True)
    import py_compile

    py_compile.compile(str(planted), cfile=str(target), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    env = {"PYTHONPYCACHEPREFIX": prefix}
    # the person's own command runs where they are; the runner, in the subagent's folder
    spawned = _zapcli(zap, "spawn", "--cli", "sh", "--cwd", str(work), "--",
                      'printf "%s" "$PYTHONPYCACHEPREFIX"', cwd=zap.cwd, env=env)
    assert spawned.returncode == 0, spawned.stderr
    sid = spawned.stdout.strip()
    done = zap("wait", "--timeout", "60", sid)
    assert sorted(p.name for p in outside.iterdir()) == [], done.out + done.err
    assert done.returncode == 0, done.out + done.err
    assert zap("output", sid).out == prefix  # the work gets the caller's value as it was
