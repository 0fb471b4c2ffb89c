"""Tryout c2: with a read-only state folder, `--json` commands printed no
JSON error document (only the stderr line) and did not say the state folder
cannot be written."""

from __future__ import annotations

import json
import subprocess

import pytest


@pytest.mark.timeout(60)
def test_a_read_only_state_folder_is_one_json_error_document(zap):
    warm = zap.spawn_sh("true")
    assert zap("wait", warm).returncode == 0
    home = zap.home
    mounted = subprocess.run(f"mount --bind {home} {home} && mount -o remount,bind,ro {home}",
                             shell=True, capture_output=True).returncode == 0
    try:
        if not mounted:
            pytest.skip("needs mount (bind, read-only) permission")
        for args in (("spawn", "--json", "--cli", "sh", "--", "echo x"), ("clean", "--json"),
                     ("rm", "--json", warm)):
            res = zap(*args)
            assert res.returncode == 1, (args, res.returncode, res.out, res.err)
            doc = json.loads(res.stdout)["error"]
            assert doc["code"] == "state" and doc["exit_code"] == 1, (args, doc)
            assert f"the state folder {home} cannot be written" in doc["message"], (args, doc)
            assert doc["message"] in res.err, (args, res.err)
    finally:
        if mounted:
            subprocess.run(["umount", str(home)])
