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


FLAKY_TESTS = '''
import os, pathlib, pytest

def _count(name):
    p = pathlib.Path(name)
    n = int(p.read_text()) + 1 if p.exists() else 1
    p.write_text(str(n))
    return n

def test_passes():
    assert True

def test_loses_a_race_once():
    assert _count("race.count") > 1, "lost the race"

@pytest.mark.parametrize("i", range(int(os.environ.get("BROKEN", "0"))))
def test_broken(i):
    _count(f"broken{i}.count")
    assert False, "broken"
'''


def _make_tests_run(tmp_path: Path, broken: int) -> tuple[subprocess.CompletedProcess, str]:
    """The suite's run as `make test` makes it, then tests/again.py on what failed."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_runtest_logreport, pytest_sessionfinish  # noqa: F401\n")
    (tmp_path / "test_flaky.py").write_text(FLAKY_TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "XDIST"))}
    env.update(PYTHONPATH=str(REPO), BROKEN=str(broken), ZAPCLI_TESTS_FAILED=str(tmp_path / "failed.txt"))
    first = subprocess.run([sys.executable, "-m", "pytest", *_make_opts(), "-p", "no:cacheprovider",
                            "test_flaky.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=110)
    assert first.returncode == 1, first.stdout + first.stderr
    again = subprocess.run([sys.executable, str(REPO / "tests" / "again.py"), str(tmp_path / "failed.txt"),
                            "-p", "no:cacheprovider"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=110)
    return again, (tmp_path / "failed.txt").read_text()


@pytest.mark.timeout(240)
def test_a_test_that_loses_a_race_once_runs_again_alone_and_is_named(tmp_path):
    again, failed = _make_tests_run(tmp_path, broken=0)
    assert failed == "test_flaky.py::test_loses_a_race_once\n"
    assert again.returncode == 0, again.stdout + again.stderr
    assert "FLAKY (failed, then passed alone): test_flaky.py::test_loses_a_race_once" in again.stdout
    assert (tmp_path / "race.count").read_text() == "2"


@pytest.mark.timeout(240)
def test_a_test_that_fails_again_fails_make_test(tmp_path):
    again, failed = _make_tests_run(tmp_path, broken=1)
    assert sorted(failed.splitlines()) == ["test_flaky.py::test_broken[0]", "test_flaky.py::test_loses_a_race_once"]
    assert again.returncode == 1 and "FLAKY" not in again.stdout
    assert "failed again" in again.stdout and (tmp_path / "broken0.count").read_text() == "2"


@pytest.mark.timeout(240)
def test_more_failures_than_a_flake_are_not_run_again(tmp_path):
    again, failed = _make_tests_run(tmp_path, broken=3)
    assert len(failed.splitlines()) == 4
    assert again.returncode == 1 and "not run again" in again.stdout
    assert (tmp_path / "race.count").read_text() == "1"  # nothing ran a second time
