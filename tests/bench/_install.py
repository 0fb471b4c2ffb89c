"""A compiled, non-editable copy of zapcli for timing, plus shared bench helpers.

This environment sets PYTHONDONTWRITEBYTECODE=1, so the editable install would
recompile every module on every run and start-up figures would measure the
compiler. `build()` copies `zapcli/` into a temp dir, byte-compiles it with
`python -m compileall -q`, and returns an `Install` whose `env()` puts that copy
first on PYTHONPATH. Third-party dependencies come from the repo venv's
site-packages (pip compiled them at install time).

The interpreter: the repo venv's site-packages also holds the editable
install's `__editable___zapcli_*_finder` .pth hook, which `site` imports at
*every* start of that venv's python (pathlib, re, urllib.parse...: about as much
as a bare interpreter start again), a cost an installed zapcli never pays. So
`build()` also makes a throwaway venv (`python -m venv --without-pip`, same
base interpreter) whose only site-packages entry is a .pth line naming the repo
venv's site-packages: dependencies resolve there, but its .pth hooks are not
run. `Install.python` is that interpreter; `Install.repo_python` is the repo
venv's, kept for the informational reference `ref_pass_repo`.

Commands run as `[python, "-m", "zapcli", ...]` from a scratch working
directory (never the repository: `-m` puts the cwd first on sys.path, which
would pick the uncompiled source tree again). References measured alongside:
`[python, "-I", "-c", "pass"]` and `[python, "-c", "import zapcli.cli.entry"]`.

Benchmarks are scripts (pytest never collects tests/bench) and never run in CI.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_PY = REPO / ".venv" / "bin" / "python"


def ensure_venv() -> None:
    """Re-exec the calling script under the repo's venv interpreter if needed
    (the benches import zapcli's dependencies: orjson, psutil)."""
    if VENV_PY.exists() and Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
        os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])


def venv_python() -> str:
    return str(VENV_PY) if VENV_PY.exists() else sys.executable


class Install:
    """A byte-compiled copy of the package in `root` (`root/zapcli`)."""

    def __init__(self, root: Path, python: str):
        self.root = root
        self.python = python  # the clean bench venv's interpreter
        self.repo_python = venv_python()
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
    def ref_pass_repo(self) -> list[str]:
        """`python -I -c pass` with the repo venv (pays the editable-install hook)."""
        return [self.repo_python, "-I", "-c", "pass"]

    @property
    def ref_import(self) -> list[str]:
        return [self.python, "-c", "import zapcli.cli.entry"]

    def run(self, argv: Sequence[str], env: dict[str, str], *, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(argv), env=env, cwd=self.scratch, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
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
        out = self.run([self.python, "-c", "import sys, zapcli.cli.entry, orjson; print(zapcli.__file__); "
                        "print(zapcli.cli.entry.__cached__); "
                        "print(any('editable' in m for m in sys.modules))"],
                       self.env()).stdout.decode().split()
        if len(out) != 3 or not out[0].startswith(str(self.root)):
            raise RuntimeError(f"zapcli resolved to {out[:1]}, not the compiled copy in {self.root}")
        if not Path(out[1]).is_file():
            raise RuntimeError(f"no byte-code for the copy: {out[1]} is missing")
        if out[2] != "False":
            raise RuntimeError("the editable-install finder is still imported by the bench interpreter")

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def build(prefix: str = "zapcli-bench-", source: Path | None = None,
          ref: str | None = None) -> Install:
    """Copy `zapcli/` (of this repository, or of `source`: another tree of it,
    for an A/B of two versions in one run; or as the repository's commit `ref`
    has it, through `git archive`) into a temp dir, compile it, return the
    Install."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    if ref is None:
        shutil.copytree((source or REPO) / "zapcli", root / "zapcli",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        import io
        import tarfile

        data = subprocess.run(["git", "archive", "--format=tar", ref, "zapcli"], cwd=REPO,
                              check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(root, filter="data")
    (root / "config").mkdir(mode=0o700)
    subprocess.run([venv_python(), "-m", "compileall", "-q", str(root / "zapcli")], check=True)
    python = _clean_venv(root / "venv")
    inst = Install(root, python)
    inst.check_copy_is_used()
    return inst


@contextlib.contextmanager
def builds(against: str | None) -> Iterator[dict[str, Install]]:
    """This tree's copy (label "") and, with `against`, commit REF's (label
    "REF_"), for an A/B in one run; both removed after."""
    installs = {"": build()}
    try:
        if against:
            installs[f"{against}_"] = build(prefix="zapcli-bench-ref-", ref=against)
        yield installs
    finally:
        for inst in installs.values():
            inst.cleanup()


def _clean_venv(path: Path) -> str:
    """A pip-less venv seeing the repo venv's site-packages through a plain
    path .pth (so that directory's own .pth hooks are not executed)."""
    repo_py = venv_python()
    subprocess.run([repo_py, "-m", "venv", "--without-pip", str(path)], check=True)
    site_of = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    deps = subprocess.run([repo_py, "-c", site_of], check=True, capture_output=True, text=True).stdout.strip()
    python = str(path / "bin" / "python")
    mine = subprocess.run([python, "-c", site_of], check=True, capture_output=True, text=True).stdout.strip()
    Path(mine, "zapcli-bench-deps.pth").write_text(deps + "\n", encoding="utf-8")
    return python


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
    if ref <= 0:
        return "n/a"
    r = value / ref
    return f"{r:.2f}x" if r < 1 else f"{r:.1f}x"
