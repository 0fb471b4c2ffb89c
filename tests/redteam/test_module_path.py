"""A folder zapcli works in never puts its Python files into zapcli's own
processes. A subagent's runner (started in the subagent's folder), the
helpers it starts there (a continuation after a usage limit, its sleeper),
an agent CLI's approval and team MCP servers, the Ray node's runner:
each is zapcli's Python, and `python -m …` or `python -c …` would look in
the folder first — a cloned repository's `threading.py`, `json.py` or
`zapcli/` package would run outside the sandbox, with the user's keys,
before any trust check. Each assertion is an outside effect: a file in
`outside` that a planted module writes when it is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import trail_records

# modules a zapcli process imports after the interpreter's own start, and the package itself
PLANTED = ("threading", "json", "signal", "subprocess", "selectors", "enum", "datetime",
           "psutil", "orjson", "yaml", "typer", "openai", "httpx", "inotify_simple")


def _plant(repo: Path, outside: Path) -> None:
    repo.mkdir(exist_ok=True)
    for name in PLANTED:
        (repo / f"{name}.py").write_text(
            f"open({str(outside / name)!r}, 'w').write('imported')\n"
            f"raise ImportError('planted {name}')\n")
    pkg = repo / "zapcli"
    pkg.mkdir(exist_ok=True)
    for name in ("__init__", "__main__"):
        (pkg / f"{name}.py").write_text(
            f"open({str(outside / ('zapcli.' + name))!r}, 'w').write('imported')\n")


def _zapcli(zap, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The person's own `zapcli` in `cwd` (its console script puts its own
    folder first on the module path, never the working folder)."""
    script = Path(sys.executable).with_name("zapcli")
    return subprocess.run([str(script), *args], cwd=cwd, env=zap.env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.timeout(120)
def test_a_folders_python_files_never_run_in_zapclis_own_processes(zap, model, outside):
    repo = zap.cwd / "repo"
    _plant(repo, outside)
    model([{"match": "say hi", "loop": True, "turns": [{"text": "hi from the agent"}]}])
    ids = []
    for args, cwd in ((("--cli", "sh", "--", "echo in its folder"), repo),  # started in place
                      (("--cli", "sh", "--cwd", str(repo), "--", "echo from elsewhere"), zap.cwd),
                      (("--on-finish", "true", "--", "say hi"), repo)):  # the built-in agent
        proc = _zapcli(zap, "spawn", *args, cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        ids.append(proc.stdout.strip())
    done = _zapcli(zap, "wait", "--timeout", "60", *ids, cwd=zap.cwd)
    assert sorted(p.name for p in outside.iterdir()) == [], done.stdout + done.stderr
    for sid in ids:
        ends = [r.get("status") for r in trail_records(zap.trail(sid)) if r.get("type") == "status"]
        assert ends[-1:] == ["completed"], (sid, ends, zap("replay", sid).out[-2000:])


@pytest.mark.timeout(60)
def test_the_ray_pool_jobs_command_never_imports_its_working_folders_python(tmp_path, outside):
    """The pool job's command (its probe for a Python that has zapcli and ray, then the
    dispatcher) runs in the job's working folder on a node whose Python may predate `-P`."""
    from zapcli.executors import ray_wire

    job = tmp_path / "job"
    _plant(job, outside)
    cmd = ray_wire.entrypoint(sys.executable, ["not", "a", "pool"])
    res = subprocess.run(["sh", "-c", cmd], cwd=job, capture_output=True, text=True, timeout=50)
    assert "nopython" not in res.stdout, res.stdout  # the probe found this Python and ran it
    assert sorted(p.name for p in outside.iterdir()) == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pythonpath", ["{lib}:", ":{lib}", "{lib}:repo-src"],
                         ids=["trailing-colon", "leading-colon", "relative"])
def test_an_empty_or_relative_pythonpath_entry_brings_no_folders_python_in(zap, model, outside,
                                                                          pythonpath):
    """`export PYTHONPATH=$PYTHONPATH:/x` of an unset one leaves an empty entry,
    which Python reads as the working folder — `-P` does not take it off. A
    runner starts in its subagent's folder, where a sandboxed agent may have
    written a `sitecustomize.py` or a `zapcli/` (found by an adversary's review):
    none runs in zapcli's processes, and the work still gets the caller's
    PYTHONPATH as it was."""
    repo = zap.cwd / "repo"
    _plant(repo, outside)
    (repo / "sitecustomize.py").write_text(f"open({str(outside / 'sitecustomize')!r}, 'w').write('x')\n")
    (repo / "repo-src").mkdir()
    (repo / "repo-src" / "sitecustomize.py").write_text(
        f"open({str(outside / 'relative-sitecustomize')!r}, 'w').write('x')\n")
    lib = zap.cwd / "lib"
    lib.mkdir()
    value = pythonpath.format(lib=lib)
    model([{"match": "say hi", "loop": True, "turns": [{"text": "hi from the agent"}]}])
    env = {**zap.env, "PYTHONPATH": value}
    ids = []
    for args in (("--cli", "sh", "--cwd", str(repo), "--", 'printf "%s" "$PYTHONPATH"'),
                 ("--cwd", str(repo), "--", "say hi")):
        proc = subprocess.run([sys.executable, "-m", "zapcli", "spawn", *args], cwd=zap.cwd, env=env,
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        ids.append(proc.stdout.strip())
    done = zap("wait", "--timeout", "60", *ids)
    assert sorted(p.name for p in outside.iterdir()) == [], done.out + done.err
    assert zap("output", ids[0]).out == value  # the work's own PYTHONPATH is the caller's
    for sid in ids:
        ends = [r.get("status") for r in trail_records(zap.trail(sid)) if r.get("type") == "status"]
        assert ends[-1:] == ["completed"], (sid, ends, zap("replay", sid).out[-2000:])
