"""Tryout c2: with a read-only state folder, `--json` commands printed no
JSON error document (only the stderr line) and did not say the state folder
cannot be written.

The folder is made read-only for the commands alone with bubblewrap (a
read-only bind in their own mount namespace), so the test needs no mount
privilege of its own: a machine where root may not mount runs it too."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest


@pytest.mark.timeout(60)
def test_a_read_only_state_folder_is_one_json_error_document(zap):
    warm = zap.spawn_sh("true")
    assert zap("wait", warm).returncode == 0
    home = zap.home
    bwrap = shutil.which("bwrap")
    assert bwrap, "bubblewrap is installed by the project's own files (make install)"
    for args in (("spawn", "--json", "--cli", "sh", "--", "echo x"), ("clean", "--json"),
                 ("rm", "--json", warm)):
        res = subprocess.run([bwrap, "--dev-bind", "/", "/", "--ro-bind", str(home), str(home),
                              "--", sys.executable, "-m", "zapcli", *args],
                             capture_output=True, text=True, timeout=30, cwd=zap.cwd,
                             env=zap.env, stdin=subprocess.DEVNULL)
        assert res.returncode == 1, (args, res.returncode, res.stdout, res.stderr)
        doc = json.loads(res.stdout)["error"]
        assert doc["code"] == "state" and doc["exit_code"] == 1, (args, doc)
        assert f"the state folder {home} cannot be written" in doc["message"], (args, doc)
        assert doc["message"] in res.stderr, (args, res.stderr)
    assert zap("poll", "--no-wait", warm).returncode == 0  # nothing lost: it is still there
