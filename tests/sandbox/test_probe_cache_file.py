"""The sandbox probe's answer kept in the state folder (issue 28, the chaos
round): written 0600 whatever the umask (it says what this machine's kernel
allows), and on a full disk no temporary copy is left behind."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from zapcli.sandbox import bwrap

pytestmark = pytest.mark.skipif(bwrap.program() is None, reason="bubblewrap is not installed")


def test_the_probe_file_is_private_at_umask_000(zap):
    code = ("import os, sys; os.umask(0); from pathlib import Path\n"
            "from zapcli.sandbox import bwrap; bwrap.probe(Path(sys.argv[1]), fresh=True)\n")
    cache = zap.home / "sandbox-probe.json"
    subprocess.run([sys.executable, "-c", code, str(cache)], env=zap.env, check=True)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600


def test_no_temporary_copy_is_left_on_a_full_disk(small_disk):
    cache = small_disk.path / "state" / "sandbox-probe.json"
    cache.parent.mkdir()
    small_disk.fill()
    found = bwrap.probe(cache, fresh=True)  # the answer still comes back
    assert found.program
    assert sorted(os.listdir(cache.parent)) == [], "a temporary copy was left"
    small_disk.free()
    bwrap.probe(cache, fresh=True)
    assert sorted(os.listdir(cache.parent)) == ["sandbox-probe.json"]


def test_spawn_writes_the_probe_file_private(zap):
    env = {**zap.env}
    proc = subprocess.run(["sh", "-c", f"umask 000 && exec {sys.executable} -m zapcli spawn "
                           "--cli sh -- true"], env=env, cwd=zap.cwd, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    cache = Path(zap.home, "sandbox-probe.json")
    if cache.exists():
        assert stat.S_IMODE(cache.stat().st_mode) == 0o600
