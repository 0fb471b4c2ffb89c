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
    workers = _make_opts()[_make_opts().index("-n") + 1]
    assert f"{workers} workers [2 items]" in lines
    assert "arithmetic broke" in res.stdout and "FAILED test_small.py::test_fails" in res.stdout
    assert "1 failed, 1 passed" in res.stdout


@pytest.mark.timeout(120)
def test_make_tests_xdist_groups_keep_a_group_on_one_worker(tmp_path):
    """The Ray, agent-CLI and telemetry-fleet tests share one cluster, one CLI
    install or one 30-second fleet per group: `--dist loadgroup` must send a
    group to one worker (under pytest 9 it did not without tests/conftest.py's hook)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    (tmp_path / "test_group.py").write_text(
        "import os, pytest\n\n"
        "@pytest.mark.xdist_group('one')\n@pytest.mark.parametrize('i', range(8))\n"
        "def test_in_group(i):\n    print('WORKER', os.environ['PYTEST_XDIST_WORKER'])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "XDIST"))}
    env["PYTHONPATH"] = str(REPO)
    res = subprocess.run([sys.executable, "-m", "pytest", *_make_opts(), "-p", "no:cacheprovider",
                          "-v", "test_group.py"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=110)
    assert res.returncode == 0, res.stdout + res.stderr
    workers = set(re.findall(r"\[(gw\d)\].*PASSED", res.stdout))
    assert len(re.findall(r"PASSED", res.stdout)) == 8, res.stdout
    assert len(workers) == 1, res.stdout


def test_the_alone_run_collects_every_file_that_holds_an_alone_test(request):
    """`make test`'s second run collects only ALONE_FILES (the Makefile's grep
    for the mark), not the whole suite again: every test marked `alone` that
    this session collected (in make test's first run: all of them, deselected
    there) is in a file it lists."""
    from tests.conftest import ALONE_SEEN

    text = (REPO / "Makefile").read_text(encoding="utf-8")
    found = re.search(r"^ALONE_FILES\s*=\s*\$\(shell (.*)\)$", text, re.M)
    assert found, "the Makefile names the alone tests' files in ALONE_FILES"
    assert "-m alone $(ALONE_FILES)" in text
    listed = subprocess.run(["sh", "-c", found.group(1)], cwd=REPO, capture_output=True, text=True,
                            check=False).stdout.split()
    seen = request.config.stash.get(ALONE_SEEN, set())
    assert seen <= set(listed), (seen, listed)
