"""The agent CLIs' version cache (`<state>/cli-versions.json`): doctor asks
every backend's version at once from threads of one process, so the cache
is written atomically with a temp file of its own per write (it used one
name per process: two threads truncated and renamed each other's file)."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading


def test_concurrent_version_checks_leave_a_whole_private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    from zapcli.backends import cli_home

    programs = []
    for n in range(8):
        prog = tmp_path / f"cli{n}"
        prog.write_text(f"#!{sys.executable}\nprint('cli{n} 1.{n}.0')\n")
        prog.chmod(0o755)
        programs.append([str(prog)])
    errors: list[BaseException] = []

    def check(command: list[str]) -> None:
        try:
            for _ in range(3):
                assert cli_home.version(command + ["--version"], command) == f"{os.path.basename(command[0])} 1.{command[0][-1]}.0"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=check, args=(c,)) for c in programs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    path = tmp_path / "state" / "cli-versions.json"
    data = json.loads(path.read_text())  # whole JSON, never two writers' bytes mixed
    assert all(isinstance(v, str) and v.startswith("cli") for v in data.values())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".cli-versions")] == []


def test_a_version_that_cannot_be_asked_comes_from_its_npm_package(tmp_path, monkeypatch):
    """A full run's gemini subagent recorded no version: its `--version`
    probe failed on a loaded machine. An npm-installed CLI's package says it."""
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "state"))
    from zapcli.backends import cli_home

    package = tmp_path / "node_modules" / "@acme" / "acme-cli"
    (package / "bundle").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@acme/acme-cli", "version": "3.2.1"}))
    script = package / "bundle" / "acme.js"
    script.write_text(f"#!{sys.executable}\nraise SystemExit(1)\n")  # its --version fails
    script.chmod(0o755)
    (tmp_path / "node_modules" / ".bin").mkdir()
    link = tmp_path / "node_modules" / ".bin" / "acme"
    link.symlink_to(script)
    assert cli_home.version([str(link), "--version"], [str(link)]) == "3.2.1 (@acme/acme-cli)"
    lonely = tmp_path / "lonely"  # no package above it: still unknown, never a stranger's
    lonely.write_text(f"#!{sys.executable}\nraise SystemExit(1)\n")
    lonely.chmod(0o755)
    assert cli_home.version([str(lonely), "--version"], [str(lonely)]) is None
