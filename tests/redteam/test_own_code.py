"""A sandbox never writes where zapcli, or a program it runs itself, takes
code from.

zapcli's own processes — the CLI, a runner, the git and bwrap it starts —
run unsandboxed, with the user's keys. Where their code lies inside a
sandbox's writable roots, a sandboxed agent could plant what the next of
them runs (an adversary's review): zapcli installed in the project's own
virtualenv (a `.pth` in its site-packages runs in every later zapcli
process), a folder of the workspace on the module path (an editable
install's `src/`, an absolute `PYTHONPATH` entry: a `sitecustomize.py`),
and a folder of the workspace on PATH (direnv's `PATH_add bin`: a `bwrap`
the next `spawn --sandbox` runs before any sandbox exists). The sandbox now
holds each of them read-only (a missing one by a placeholder) and says so.
The outside effect: a file the planted code writes when it runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO, Zap
from tests.sandbox.conftest import needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.timeout(180)]


def _run(zap: Zap, python: str, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "zapcli", *args], cwd=zap.cwd,
                          env={**zap.env, **(env or {})}, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def _spawn_and_wait(zap: Zap, python: str, cmd: str, env: dict[str, str] | None = None) -> str:
    res = _run(zap, python, "spawn", "--cli", "sh", "--sandbox", "--", cmd, env=env)
    assert res.returncode == 0, res.stderr
    sid = res.stdout.strip()
    _run(zap, python, "wait", "--timeout", "60", sid, env=env)
    return sid


def test_zapcli_in_the_projects_own_virtualenv_runs_no_planted_pth(zap: Zap, outside: Path):
    env_dir = zap.cwd / ".venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir),
                                                   "platbase": str(env_dir)}))
    deps = Path(sysconfig.get_path("purelib"))  # zapcli's own dependencies, as installed here
    (site / "deps.pth").write_text(f"{REPO}\n{deps}\n")
    python = str(env_dir / "bin" / "python")
    plant = f"import os; open({str(outside / 'pth')!r} + str(os.getpid()), 'w')"
    sid = _spawn_and_wait(zap, python, f"echo {plant!r} > {site}/zz.pth; echo tried")
    again = _run(zap, python, "list", "--all")
    assert sorted(p.name for p in outside.iterdir()) == [], again.stdout + again.stderr
    assert again.returncode == 0, again.stderr
    assert not (site / "zz.pth").exists()
    said = _run(zap, python, "replay", sid).stdout
    assert str(env_dir) in said, said  # the trail says what it held, and why


def test_a_module_path_folder_in_the_workspace_gets_no_planted_sitecustomize(zap: Zap,
                                                                              outside: Path):
    src = zap.cwd / "src"
    src.mkdir()
    env = {"PYTHONPATH": f"{src}{os.pathsep}{zap.env['PYTHONPATH']}"}
    plant = f"open({str(outside / 'sitecustomize')!r}, 'w')"
    _spawn_and_wait(zap, sys.executable, f"echo {plant!r} > src/sitecustomize.py", env=env)
    _spawn_and_wait(zap, sys.executable, "true", env=env)  # a runner, with that module path
    assert sorted(p.name for p in outside.iterdir()) == []
    assert not (src / "sitecustomize.py").exists()


def test_a_path_folder_in_the_workspace_gets_no_planted_bwrap(zap: Zap, outside: Path):
    path = {"PATH": f"{zap.cwd / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    plant = (f"mkdir -p bin && printf '#!/bin/sh\\n: > {outside}/bwrap\\n' > bin/bwrap && "
             "chmod +x bin/bwrap")
    _spawn_and_wait(zap, sys.executable, plant, env=path)
    sid = _spawn_and_wait(zap, sys.executable, "echo second", env=path)
    assert sorted(p.name for p in outside.iterdir()) == []
    assert _run(zap, sys.executable, "output", sid, env=path).stdout == "second\n"


def test_python_m_zapcli_typed_in_the_workspace_leaves_it_writable(zap: Zap, model):
    """`python -m` puts the folder it is typed in first on the module path:
    the person's own choice (docs/explanation/security.md), not where
    zapcli's code lies — a foreground `run` there builds its sandbox in that
    process, and must still let its commands write the workspace."""
    target = zap.cwd / "made.txt"
    model([{"match": "make it", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": str(target), "content": "made"}}]},
        {"text": "done"}]}])
    ran = zap("run", "--approval", "auto-edit", "make it", timeout=120)
    assert ran.returncode == 0, ran.err
    assert target.exists(), ran.out + ran.err


def test_an_agents_file_tools_write_no_code_zapcli_runs(zap: Zap, outside: Path, model):
    """The file tools write from the agent's runner, outside the sandbox:
    an edit in one of those folders asks a person (here: nobody; denied)."""
    src = zap.cwd / "src"
    src.mkdir()
    env = {"PYTHONPATH": f"{src}{os.pathsep}{zap.env['PYTHONPATH']}"}
    plant = f"open({str(outside / 'sitecustomize')!r}, 'w')\n"
    model([{"match": "plant it", "turns": [
        {"tool_calls": [{"name": "write", "arguments": {"path": str(src / "sitecustomize.py"),
                                                        "content": plant}}]},
        {"text": "done"}]}])
    res = _run(zap, sys.executable, "spawn", "--approval", "auto-edit", "--unattended", "plant it",
               env=env)
    assert res.returncode == 0, res.stderr
    agent = res.stdout.strip()
    _run(zap, sys.executable, "wait", "--timeout", "60", agent, env=env)
    said = _run(zap, sys.executable, "replay", agent, env=env).stdout
    assert "write" in said, said  # it asked for the write
    _spawn_and_wait(zap, sys.executable, "true", env=env)  # a runner, with that module path
    assert sorted(p.name for p in outside.iterdir()) == []
    assert not (src / "sitecustomize.py").exists(), said
