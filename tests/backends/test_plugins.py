"""Backends and executors from another package (docs/explanation/rules.md#plugins, issue 17 item 2).

`tests/plugin` is a package of its own (`zapcli-echo-plugin`, installed by
`make install` beside zapcli): the `echo` backend — `echo-agent`, an agent
CLI with an event stream of its own — and the `echo-local` executor, through
the entry points `zapcli.backends` and `zapcli.executors` only. Its `--cli
echo` works with spawn, poll, kill, continue, doctor, a definition's `cli:`,
the tool schema and bash completion. Broken plugins (one that does not
import, one that names something else than a backend, one whose constructor
raises) are one warning each, naming it, and fail no command that does not
ask for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backends import clitest as ct
from tests.conftest import PLUGIN_DIR, REPO, wait_until

BIN = Path(sys.executable).parent  # the venv's: zapcli
PLUGIN_BIN = PLUGIN_DIR / "bin"  # echo-agent: the plugin lives beside the venv (make test-plugin)


@pytest.fixture
def echo(zap):
    """The plugin is there (installed by the project's Makefile), and the
    test's zapcli finds echo-agent on PATH."""
    from importlib.metadata import entry_points

    if "echo" not in {ep.name for ep in entry_points(group="zapcli.backends")}:
        pytest.fail("the tests' plugin package is not installed: `make test-plugin` installs "
                    "tests/plugin into .venv/test-plugin")
    zap.env["PATH"] = f"{BIN}:{PLUGIN_BIN}:{zap.env.get('PATH', '/usr/bin:/bin')}"
    return zap


def _spawn(zap, *args: str) -> str:
    proc = zap("spawn", *args)
    assert proc.returncode == 0, proc.err
    return proc.out.strip()


def test_a_plugin_backend_spawns_polls_continues_and_is_killed(echo):
    zap = echo
    sid = _spawn(zap, "--cli", "echo", "--", "remember PLUM")
    assert zap("wait", sid, "--timeout", "60").returncode == 0, ct.dump(zap, sid)
    poll = zap("poll", sid, "--no-wait").out
    assert "completed" in poll and "noted PLUM" in poll and "CLI: echo" in poll, poll
    session = ct.records(zap, sid, "session")[0]
    assert session["version"] == "1.2.0" and session["cli"] == "echo"
    assert ct.usage_rows(zap, sid)[0]["input_tokens"] == len("remember PLUM")
    # continue: the plugin's own resume, in a copy of its private home
    proc = zap("continue", sid, "recall")
    assert proc.returncode == 0, proc.err
    again = proc.out.strip()
    assert zap("wait", again, "--timeout", "60").returncode == 0, ct.dump(zap, again)
    assert ct.records(zap, again, "report")[-1]["text"] == "you said: PLUM"
    # kill: its whole tree, as for any backend
    slow = _spawn(zap, "--cli", "echo", "--", "sleep 60")
    ct.wait_session(zap, slow)
    out = zap("kill", slow, "--grace", "1")
    assert out.returncode == 0 and "cancelled" in out.out, out.err
    wait_until(lambda: ct.marked(slow) == [], 10, 0.1)
    assert zap.status(slow) == "cancelled"


def test_a_plugin_backend_is_in_doctor_definitions_schema_and_completion(echo, tmp_path):
    zap = echo
    doc = zap.json("doctor")
    backends = next(c for c in doc["checks"] if c["name"] == "backends")
    line = next(p for p in backends["problems"] if p.startswith("echo:"))
    assert "echo-agent 1.2.0" in line and "in the tested range >=1.2.0, <1.3" in line, line
    # a definition naming the plugin's backend (`cli: echo`) runs on it; one
    # naming no backend is told so by `agents`
    folder = zap.cwd / ".zapcli" / "subagents"
    folder.mkdir(parents=True)
    (folder / "echoer.yml").write_text("name: echoer\ndescription: echoes\ncli: echo\n")
    (folder / "lost.yml").write_text("name: lost\ndescription: names nothing\ncli: nosuch\n")
    zap("trust", check=True)
    listed = zap.json("agents", "list")
    problems = json.dumps(listed)
    assert "`cli: nosuch` names no backend" in problems and "`cli: echo`" not in problems
    sid = _spawn(zap, "--agent", "echoer", "--", "hello there")
    assert zap("wait", sid, "--timeout", "60").returncode == 0, ct.dump(zap, sid)
    assert ct.records(zap, sid, "spawn")[0]["cli"] == "echo"
    assert ct.records(zap, sid, "report")[-1]["text"] == "echo: hello there"
    # the tool's enum and the shell's completion
    schema = json.loads(zap("tool-schema").out)
    assert "echo" in json.dumps(schema)
    from zapcli.cli.gen import COMPLETIONS  # the shipped script, where the package carries it
    script = (f"source {COMPLETIONS['bash']}; COMP_WORDS=(zapcli spawn --cli e); "
              "COMP_CWORD=3; _zapcli; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env=zap.env, cwd=zap.cwd)
    assert done.stdout.split() == ["echo"], done.stdout + done.stderr


def test_a_plugin_executor_owns_its_config_section(echo):
    zap = echo
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text("echo-local:\n  label: night-shift\n")
    sid = _spawn(zap, "--executor", "echo-local", "--cli", "sh", "--", "echo on the plugin")
    assert zap("wait", sid, "--timeout", "60").returncode == 0, ct.dump(zap, sid)
    assert ct.records(zap, sid, "spawn")[0]["echo_label"] == "night-shift"
    assert ct.records(zap, sid, "process")[0]["executor"] == "echo-local"
    assert "on the plugin" in zap("output", sid).out
    (config / "config.yaml").write_text("echo-local:\n  colour: red\n")
    proc = zap("spawn", "--cli", "sh", "--", "true")
    assert proc.returncode == 1 and "config.yaml:2" not in proc.err  # the key's line is 1
    assert "config.yaml:1: key 'echo-local': unknown key echo-local.colour" in proc.err, proc.err


def test_no_line_of_zapcli_names_the_plugin():
    mentions = [p for p in (REPO / "zapcli").rglob("*.py")
                if "zapcli_echo" in p.read_text(encoding="utf-8") or "echo-agent" in
                p.read_text(encoding="utf-8")]
    assert mentions == []


BROKEN = '''
from zapcli.backends.base import Backend


class NotABackend:
    pass


class Raising(Backend):
    def __init__(self):
        raise RuntimeError("no licence key for the raising plugin")
'''
ENTRY_POINTS = """[zapcli.backends]
noimport = broken_plugins_missing:Backend
wrongclass = broken_plugins_mod:NotABackend
raising = broken_plugins_mod:Raising

[zapcli.executors]
badexec = broken_plugins_mod:NotABackend
"""


def test_broken_plugins_are_one_warning_each_and_fail_no_command(zap, tmp_path):
    """A package whose entry points are broken, found on PYTHONPATH (a real
    dist-info folder, as pip would leave one)."""
    site = tmp_path / "site"
    info = site / "broken_plugins-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (site / "broken_plugins_mod.py").write_text(BROKEN)
    zap.env["PYTHONPATH"] = f"{REPO}{os.pathsep}{site}"
    # a command naming a built-in never even looks at them
    proc = zap("spawn", "--cli", "sh", "--", "true")
    assert proc.returncode == 0 and proc.err == "", proc.err
    # commands that list every backend: one warning per broken plugin, naming it
    for args in (("__complete", "cli"), ("tool-schema",), ("doctor",)):
        proc = zap(*args)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.err, (args, proc.err)
        for name in ("noimport", "wrongclass", "raising"):
            assert proc.err.count(f"plugin '{name}' (package broken-plugins)") == 1, (args, proc.err)
        assert "does not import" in proc.err and "is not a zapcli.backends.base.Backend" in proc.err
        assert "no licence key for the raising plugin" in proc.err
    listed = zap("__complete", "cli").out.split()
    assert "sh" in listed and not {"noimport", "wrongclass", "raising"} & set(listed)
    assert zap("__complete", "executor").out.split()[:2] == ["local", "ray"]
    doc = zap.json("doctor")
    checks = {c["name"]: c for c in doc["checks"]}
    assert any("raising" in p for p in checks["backends"]["problems"]), checks["backends"]
    assert any("badexec" in p for p in checks["executors"]["problems"]), checks["executors"]
    # asking for one by name says why it cannot be used
    proc = zap("spawn", "--cli", "raising", "--", "hi")
    assert proc.returncode == 1 and "no licence key" in proc.err, proc.err


PROBE = """
import sys
from zapcli.cli.entry import main
main(sys.argv[1:])
sys.stderr.write("SCANNED %s\\n" % ("importlib.metadata" in sys.modules))
"""


@pytest.mark.parametrize("argv", [("spawn", "--cli", "sh", "--", "true"), ("poll", "--no-wait", "0badc0de"),
                                  ("list",), ("call", '{"action": "list"}'),
                                  ("spawn", "--cli", "mycli", "--", "hi")])
def test_the_hot_commands_never_scan_for_plugins(echo, argv):
    """With a plugin installed and a wrapper in config.yaml, a command naming
    a built-in (or a wrapper of one) never pays for the entry-point scan."""
    zap = echo
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(
        f"backends:\n  mycli:\n    command: {PLUGIN_BIN / 'echo-agent'}\n    format: claude-stream-json\n")
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], env={**zap.env, "ANTHROPIC_API_KEY": "k"},
                          cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    assert "SCANNED False" in proc.stderr, proc.stderr
