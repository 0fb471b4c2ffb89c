"""`zapcli.paths` works out the default state and config folders on Linux
without importing `platformdirs` (~16 ms of every command's start-up, for a
person who set neither ZAPCLI_HOME nor ZAPCLI_CONFIG_HOME): its answer must
be the library's, whatever the environment says — and where it is not sure,
the library is asked."""

from __future__ import annotations

import itertools
import subprocess
import sys

import platformdirs
import pytest

from tests.conftest import REPO
from zapcli import paths

HOMES = [None, "/home/u", "/home/u/", "/", "//srv//u", "relative/home", "", "~"]
XDG = [None, "", "/x/state", "/x/state/", "relative", " /leading-space", "~/xdg"]


@pytest.mark.parametrize("home,xdg", list(itertools.product(HOMES, XDG)))
def test_the_folders_are_platformdirs_answers(monkeypatch, home, xdg):
    for name in ("ZAPCLI_HOME", "ZAPCLI_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (("HOME", home), ("XDG_STATE_HOME", xdg), ("XDG_CONFIG_HOME", xdg)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    for ours, theirs in ((paths.state_dir, platformdirs.user_state_dir),
                         (paths.config_dir, platformdirs.user_config_dir)):
        try:
            want = theirs("zapcli")
        except RuntimeError:  # the library cannot tell either: neither may answer
            with pytest.raises(RuntimeError):
                ours()
            continue
        assert str(ours()) == str(type(ours())(want)), (home, xdg)


def test_a_command_of_a_person_with_the_default_setup_does_not_import_it(tmp_path):
    code = ("import sys; from zapcli import paths; paths.state_dir(); paths.config_dir(); "
            "print('platformdirs' in sys.modules)")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "False", out.stderr
