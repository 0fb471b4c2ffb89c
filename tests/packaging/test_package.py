"""The package installs whole: the sdist and the wheel built from this
checkout pass `twine check`, carry the license, the metadata, the shell
completions and the man page; and, measured as a new user would meet it,
`pipx install` of the wheel into an empty home, then `zapcli completion
install zsh`, and a real zsh completes `zapcli spawn --cli <TAB>`."""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.cli.shells import Zsh, needs_zsh

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.xdist_group("package")  # one build, shared by this module's tests


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel, built once (uv build: an isolated build
    environment with the build-system's setuptools)."""
    uv = shutil.which("uv", path=str(BIN)) or shutil.which("uv")
    if uv is None:
        pytest.skip("needs uv (the dev extra: pip install 'zapcli[dev]')")
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([uv, "build", "--quiet", "--out-dir", str(out), str(ROOT)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


def test_twine_check_passes(dist: dict[str, Path]) -> None:
    twine = shutil.which("twine", path=str(BIN))
    if twine is None:
        pytest.skip("needs twine (the dev extra)")
    res = subprocess.run([twine, "check", "--strict", str(dist["sdist"]), str(dist["wheel"])],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_wheel_carries_license_metadata_completions_and_man_page(dist: dict[str, Path]) -> None:
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(wheel.read(meta_name))
        license_text = wheel.read(next(n for n in names if n.endswith("licenses/LICENSE")))
    assert {"zapcli/cli/share/completions/zapcli.bash", "zapcli/cli/share/completions/_zapcli",
            "zapcli/cli/share/completions/zapcli.fish", "zapcli/cli/share/man/man1/zapcli.1"} <= names
    assert b"Apache License" in license_text and b"Version 2.0" in license_text
    assert meta["License-Expression"] == "Apache-2.0" and meta["License-File"] == "LICENSE"
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.10" in classifiers and len(classifiers) >= 8
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    with tarfile.open(dist["sdist"]) as sdist:
        assert any(n.endswith("/LICENSE") for n in sdist.getnames())


@needs_zsh
@pytest.mark.timeout(600)
def test_pipx_install_then_zsh_completes_the_backends(dist: dict[str, Path], tmp_path: Path) -> None:
    """Measured: an empty home, `pipx install` of the wheel, `zapcli
    completion install zsh`, then `zapcli spawn --cli <TAB>` in a new zsh
    that reads only what the install wrote (.zshrc and the completion)."""
    pipx = shutil.which("pipx", path=str(BIN))
    if pipx is None:
        pytest.skip("needs pipx (the dev extra)")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZAPCLI_", "PIPX_", "XDG_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(HOME=str(home), PATH=f"{BIN}:/usr/bin:/bin")
    res = subprocess.run([pipx, "install", str(dist["wheel"])], env=env, capture_output=True,
                         text=True, timeout=540)
    assert res.returncode == 0, res.stdout + res.stderr
    installed = home / ".local" / "bin" / "zapcli"
    assert installed.exists(), sorted(p.name for p in (home / ".local" / "bin").iterdir())
    user = {"HOME": str(home), "PATH": f"{installed.parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    res = subprocess.run(["zapcli", "completion", "install", "zsh"], env=user, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert (home / ".local" / "share" / "zsh" / "site-functions" / "_zapcli").is_file()
    with Zsh(user, home, tmp_path / "zsh", user_rc=True) as zsh:
        assert zsh.complete("zapcli spawn --cli ") == [
            "zapcli", "sh", "claude", "codex", "gemini", "opencode", "qwen", "pi"]
        assert "--wait-secs" in zsh.complete("zapcli poll --")
    res = subprocess.run(["zapcli", "man", "--install"], env=user, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    if shutil.which("man"):
        found = subprocess.run(["man", "-w", "zapcli"], env=user, capture_output=True, text=True,
                               timeout=60)
        assert found.stdout.strip() == str(home / ".local/share/man/man1/zapcli.1"), found
