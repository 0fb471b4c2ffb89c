"""`make test`'s pytest options (#14.6): pytest-xdist's start-up is said once,
not "bringing up nodes..." twice, and failures still show in full."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _make_opts() -> list[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    found = re.search(r"^PYTEST_OPTS\s*=\s*(.*)$", text, re.M)
    assert found, "the Makefile names its pytest options in PYTEST_OPTS"
    assert "$(PYTEST_OPTS) tests" in text, "make test uses PYTEST_OPTS"
    return shlex.split(found.group(1))


@pytest.mark.timeout(120)
def test_make_tests_pytest_options_say_each_thing_once(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_small.py").write_text(
        "def test_passes():\n    assert True\n\n"
        "def test_fails():\n    assert 1 + 1 == 3, 'arithmetic broke'\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "XDIST"))}
    res = subprocess.run([sys.executable, "-m", "pytest", *_make_opts(), "-p", "no:cacheprovider",
                          "test_small.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=110)
    lines = res.stdout.splitlines()
    assert res.returncode == 1, res.stdout + res.stderr
    assert not any(lines.count(x) > 1 for x in lines if x.strip() and not set(x) <= set("=-_ ")), lines
    assert "bringing up nodes..." not in lines
    assert "2 workers [2 items]" in lines
    assert "arithmetic broke" in res.stdout and "FAILED test_small.py::test_fails" in res.stdout
    assert "1 failed, 1 passed" in res.stdout
