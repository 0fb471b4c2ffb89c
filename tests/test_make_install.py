"""`make install` and `make demo` put no test plugin into the user's `.venv`
(issue 28 item 8): the tests' `echo` backend was installed beside zapcli, so
`tool-schema`, the MCP tools and completion offered it to models. It goes
into a folder of its own that only `make test` and the tests put on their
path (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import PLUGIN_DIR, REPO


def _dry(target: str, venv: str) -> str:
    res = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_install_and_demo_install_no_test_plugin_and_test_does(tmp_path):
    venv = str(tmp_path / "venv")
    for target in ("install", "demo"):
        assert "tests/plugin" not in _dry(target, venv), target
    assert "--target" in _dry("test", venv) and "tests/plugin" in _dry("test", venv)


def test_the_venv_offers_no_echo_backend_outside_the_tests():
    """What a user's shell, MCP client or model sees: the venv alone. On
    main (a venv `make install` built): `import zapcli_echo` worked and
    tool-schema listed the `echo` backend."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PYTHONPATH"] = str(REPO)
    plugin = subprocess.run([sys.executable, "-c", "import zapcli_echo"], env=env,
                            capture_output=True, timeout=60)
    assert plugin.returncode != 0, "the tests' plugin is installed in the venv itself"
    schema = subprocess.run([sys.executable, "-m", "zapcli", "tool-schema"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert schema.returncode == 0 and '"echo"' not in schema.stdout
    assert PLUGIN_DIR.is_dir(), "make test-plugin installs it for the tests"
