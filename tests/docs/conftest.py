"""The documentation site, built once per test session (and per xdist
worker: the site tests share the `docs` group) with `mkdocs build --strict`
into a temporary folder, as `make docs` builds it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Site:
    folder: Path
    log: str
    seconds: float
    pictures: bool  # chromium was there to make them


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.skip("needs mkdocs and mkdocs-material: pip install 'zapcli[docs]' (make test installs it)")
    out = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
           "NO_MKDOCS_2_WARNING": "1"}
    pictures = bool(shutil.which("chromium") or shutil.which("chromium-browser"))
    if not pictures or not shutil.which("tmux"):  # the build says where a picture would be;
        env["ZAPCLI_DOCS_PICTURES"] = "optional"  # the picture tests skip
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out),
                          "--config-file", str(ROOT / "mkdocs.yml")],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert res.returncode == 0, f"mkdocs build --strict failed:\n{res.stdout}\n{res.stderr}"
    return Site(out, res.stderr, time.monotonic() - started, pictures)
