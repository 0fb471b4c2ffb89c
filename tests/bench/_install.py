"""A compiled, non-editable copy of zapcli for timing, plus shared bench helpers.

This environment sets PYTHONDONTWRITEBYTECODE=1, so the editable install would
recompile every module on every run and start-up figures would measure the
compiler. `build()` copies `zapcli/` into a temp dir, byte-compiles it with
`python -m compileall -q`, and returns an `Install` whose `env()` puts that copy
first on PYTHONPATH (third-party dependencies still come from the venv's
site-packages, which pip compiled at install time).

Commands run as `[venv_python, "-m", "zapcli", ...]` from a scratch working
directory (never the repository: `-m` puts the cwd first on sys.path, which
would pick the uncompiled source tree again). References measured alongside:
`[venv_python, "-I", "-c", "pass"]` and `[venv_python, "-c", "import zapcli.cli.entry"]`.

Benchmarks are scripts (pytest never collects tests/bench) and never run in CI.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_PY = REPO / ".venv" / "bin" / "python"


def ensure_venv() -> None:
    """Re-exec the calling script under the repo's venv interpreter if needed
    (the benches import zapcli's dependencies: orjson, psutil, filelock)."""
    if VENV_PY.exists() and Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
        os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])


def venv_python() -> str:
    return str(VENV_PY) if VENV_PY.exists() else sys.executable


class Install:
    """A byte-compiled copy of the package in `root` (`root/zapcli`)."""

    def __init__(self, root: Path):
        self.root = root
        self.python = venv_python()
        self.scratch = root / "cwd"  # neutral working directory for every command
        self.scratch.mkdir(exist_ok=True)

    # -- environments -------------------------------------------------------
    def env(self, home: Path | None = None, *, session: str | None = "bench-session",
            extra: dict[str, str] | None = None) -> dict[str, str]:
        """os.environ with the compiled copy first on PYTHONPATH and isolated
        state/config folders. `session=None` leaves ZAPCLI_SESSION unset so the
        terminal-session derivation runs."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("ZAPCLI_") and k != "PYTHONPATH"}
        env["PYTHONPATH"] = str(self.root)
        env["NO_COLOR"] = "1"
        env["ZAPCLI_CONFIG_HOME"] = str(self.root / "config")  # empty: defaults only
        if home is not None:
            env["ZAPCLI_HOME"] = str(home)
        if session is not None:
            env["ZAPCLI_SESSION"] = session
        env.update(extra or {})
        return env

    def use_in_process(self, home: Path | None = None, session: str | None = "bench-session") -> None:
        """Import zapcli from the compiled copy in this process too, and point
        the in-process state at `home` (for building fixtures via the store API)."""
        sys.path.insert(0, str(self.root))
        for k in [k for k in os.environ if k.startswith("ZAPCLI_")]:
            del os.environ[k]
        os.environ["ZAPCLI_CONFIG_HOME"] = str(self.root / "config")
        if home is not None:
            os.environ["ZAPCLI_HOME"] = str(home)
        if session is not None:
            os.environ["ZAPCLI_SESSION"] = session

    def new_home(self, name: str = "home") -> Path:
        """A fresh, empty state folder inside the install's temp dir."""
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))

    # -- command lines ------------------------------------------------------
    def zapcli(self, *args: str) -> list[str]:
        return [self.python, "-m", "zapcli", *args]

    @property
    def ref_pass(self) -> list[str]:
        return [self.python, "-I", "-c", "pass"]

    @property
    def ref_import(self) -> list[str]:
        return [self.python, "-c", "import zapcli.cli.entry"]

    def run(self, argv: Sequence[str], env: dict[str, str], *, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(argv), env=env, cwd=self.scratch, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{argv[2:]} exited {proc.returncode}: "
                               f"{proc.stderr.decode('utf-8', 'replace')[-2000:]}")
        return proc

    def timed(self, argv: Sequence[str], env: dict[str, str], *, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
        """(wall seconds, result) of one run, stdout/stderr piped (not a TTY)."""
        t0 = time.perf_counter()
        proc = self.run(argv, env, check=check)
        return time.perf_counter() - t0, proc

    def check_copy_is_used(self) -> None:
        """Fail loudly if the subprocess would import the editable source tree."""
        out = self.run([self.python, "-c", "import zapcli, sys; print(zapcli.__file__); "
                        "print(sys.flags.dont_write_bytecode)"], self.env()).stdout.decode().split()
        if not out or not out[0].startswith(str(self.root)):
            raise RuntimeError(f"zapcli resolved to {out[:1]}, not the compiled copy in {self.root}")

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def build(prefix: str = "zapcli-bench-") -> Install:
    """Copy `zapcli/` into a temp dir, compile it, return the Install."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    shutil.copytree(REPO / "zapcli", root / "zapcli",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "config").mkdir(mode=0o700)
    subprocess.run([venv_python(), "-m", "compileall", "-q", str(root / "zapcli")], check=True)
    inst = Install(root)
    inst.check_copy_is_used()
    return inst


# -- shared figures helpers ---------------------------------------------------

def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1000.0


def interleaved(n: int, runners: dict[str, Callable[[], float]], warmup: int = 2) -> dict[str, list[float]]:
    """Run each runner `n` times, round-robin (so drift hits all alike); each
    returns the seconds it measured. `warmup` rounds are discarded."""
    out: dict[str, list[float]] = {k: [] for k in runners}
    for i in range(warmup + n):
        for name, fn in runners.items():
            t = fn()
            if i >= warmup:
                out[name].append(t)
    return out


def fmt_ratio(value: float, ref: float) -> str:
    return f"{value / ref:.1f}x" if ref > 0 else "n/a"
