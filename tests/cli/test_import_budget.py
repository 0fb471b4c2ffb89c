"""An import budget per hot command (#12 speed): `spawn --cli sh`, `poll
--no-wait`, `list` and a built-in agent's `spawn` import no heavy library and
stay within a module count. Counts modules, never time (tests do not assert wall-clock speed).

The probe starts Python without `site` (`-S`), so what the interpreter and
the editable install's start-up hook import is not taken for zapcli's own:
every module the command imports is counted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO

PROBE = """
import sys
base = set(sys.modules)
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from zapcli.cli.entry import main
main(sys.argv[3:])
new = [m for m in set(sys.modules) - base if sys.modules[m] is not None]  # None: marked absent
import json
sys.stderr.write("MODULES " + json.dumps(sorted(new)) + "\\n")
"""

# Nothing a hot command needs: the CLI framework, the model SDKs, YAML, psutil
# (procfs answers identity on Linux), asyncio, sqlite; orjson (it imports
# dataclasses, inspect, uuid, datetime: the stdlib json reads a few records),
# dataclasses (zapcli.plain), typing (annotations only), shutil.
HEAVY = {"typer", "click", "rich", "openai", "anthropic", "mcp", "yaml", "psutil", "pydantic",
         "httpx", "asyncio", "concurrent", "sqlite3", "ctypes", "platformdirs", "filelock",
         "orjson", "dataclasses", "inspect", "ast", "typing", "shutil", "datetime", "uuid",
         "opentelemetry", "hashlib"}
# What pathlib binds for later and json's pure-Python half (both bring `re`):
# a hot command reaches pathlib through `zapcli.lean` and reads and writes JSON
# with json's C half (`zapcli.stdjson`); `signal`, whose enums are built at
# import (what a spawn blocks and resets is asked of `_signal`, its core).
LEAN = {"re", "json", "fnmatch", "ntpath", "urllib.parse", "ipaddress", "signal"}
# Only spawn starts a process (subprocess brings threading along).
NOT_WATCHING = {"subprocess", "threading"}
# Modules each may import beyond a bare interpreter (measured, with a little room).
BUDGET = {"spawn": 96, "poll": 78, "list": 78,  # measured 91, 73, 73 (#32 session 5; were 105, 87, 87)
          "agent_spawn": 140}  # measured 129, 135 reading the state database (#32 session 5; was 255)


@pytest.mark.parametrize("name,argv", [
    ("spawn", ["spawn", "--cli", "sh", "--", "true"]),
    ("poll", ["poll", "--no-wait", "0badc0de"]),
    ("list", ["list"]),
    ("list", ["list", "--all"]),
])
def test_hot_commands_stay_within_their_import_budget(zap, name, argv):
    site = sysconfig.get_paths()["purelib"]  # the dependencies, without running their .pth hooks
    res = subprocess.run([sys.executable, "-S", "-c", PROBE, str(REPO), site, *argv], env=zap.env,
                         cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    line = next((x for x in res.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line, res.stderr
    modules = json.loads(line[len("MODULES "):])
    heavy = sorted({m.split(".")[0] for m in modules} & (HEAVY | (NOT_WATCHING if name != "spawn" else set())))
    assert not heavy, f"{name} imports {heavy}"
    telemetry = [m for m in modules if m.startswith("zapcli.telemetry")]
    assert not telemetry, f"{name} imports {telemetry}: traces are made from trails, elsewhere"
    assert not LEAN & set(modules), f"{name} imports {sorted(LEAN & set(modules))}"
    assert len(modules) <= BUDGET[name], f"{name} imports {len(modules)} modules: {modules}"


def _probe(zap, argv: list[str]) -> tuple[list[str], str]:
    """(the modules the command imported, what it printed)."""
    site = sysconfig.get_paths()["purelib"]
    res = subprocess.run([sys.executable, "-S", "-c", PROBE, str(REPO), site, *argv],
                         env=zap.env, cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    line = next((x for x in res.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line, res.stderr
    return json.loads(line[len("MODULES "):]), res.stdout


def test_spawn_with_a_users_config_and_over_max_kept_stays_within_its_budget(zap):
    """#32: a user's config.yaml read before is not parsed again (no YAML),
    and a spawn over `max_kept` whose subagent runs leaves retention to that
    subagent's runner (retention runs only when none runs): no retention
    module, no listing of every trail."""
    config = Path(zap.env["ZAPCLI_CONFIG_HOME"]) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("max_kept: 1\ntimeout_s: 120\nhooks:\n  needs_input: 'true'\n")
    done = [zap.spawn_sh("true") for _ in range(2)]
    zap("wait", "--timeout", "30", *done)  # one may be gone by then: its runner's retention (max_kept 1)
    argv = ["spawn", "--cli", "sh", "--", "sleep 30"]
    _, first = _probe(zap, argv)  # the config's first read since it was written parses it
    modules, second = _probe(zap, argv)
    for sid in (first.strip(), second.strip()):
        assert sid.startswith("sa_"), (first, second)
        zap("kill", sid)
    assert not {m.split(".")[0] for m in modules} & HEAVY, modules  # yaml among them
    assert "zapcli.lifecycle.retention" not in modules
    # + zapcli.configfile, and zapcli.trail.events and .finish that its hooks bring
    assert len(modules) <= BUDGET["spawn"] + 3, modules


# What a built-in agent's spawn must not load once its definitions are kept: the
# YAML loader and the schema (definitions read back by their bytes), plugin
# discovery through importlib.metadata (no installed entry_points.txt names the
# group), the loop's types, the sandbox's policy and command-line builder (the
# probe's kept answer is read), dataclasses and typing.
NOT_FOR_AN_AGENT_SPAWN = ("zapcli.definitions.schema", "zapcli.definitions.yamlload",
                          "zapcli.definitions.checker", "zapcli.agent.types", "zapcli.sandbox.policy",
                          "zapcli.sandbox.bwrap", "importlib.metadata", "zapcli.capabilities.captools")


def test_a_built_in_agents_spawn_stays_within_its_budget(zap, model):
    """#32: `spawn TASK` for zapcli's own agent resolves and checks its
    definition, grant, model, trust and budget with no heavy library: its
    second spawn (the definitions kept by the first) imports none of
    NOT_FOR_AN_AGENT_SPAWN and stays within a module count. sqlite3 (and the
    datetime it brings) only to read the definitions' switches, when the
    state database exists."""
    model([{"loop": True, "turns": [{"text": "done."}]}])
    ids = []
    for n in range(2):
        modules, out = _probe(zap, ["spawn", f"budget probe {n}"])
        ids.append(out.strip())
        assert ids[-1].startswith("sa_"), out
    zap("wait", "--timeout", "60", *ids, check=True)
    tops = {m.split(".")[0] for m in modules}
    assert not tops & (HEAVY - {"sqlite3", "datetime"}), sorted(tops & HEAVY)
    assert not [m for m in modules if m.startswith(NOT_FOR_AN_AGENT_SPAWN)], modules
    assert not [m for m in modules if m.startswith("zapcli.telemetry")]
    assert len(modules) <= BUDGET["agent_spawn"], f"{len(modules)} modules: {modules}"


def test_mcp_serve_on_stdio_imports_no_http_or_client_half_of_the_sdk(zap):
    """#24.2: a stdio server answers `initialize` without importing what only
    HTTP serving or an MCP client needs (uvicorn, httpx, the SDK's client and
    FastMCP layer): a client that gives up after 5 s gets its answer on a busy
    machine. (The low-level server itself still imports starlette.)"""
    site = sysconfig.get_paths()["purelib"]
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}) + "\n"
    res = subprocess.run([sys.executable, "-S", "-c", PROBE, str(REPO), site, "mcp", "serve"],
                         env=zap.env, cwd=zap.cwd, input=hello, capture_output=True, text=True,
                         timeout=120)
    assert '"id":1' in res.stdout.replace(" ", "") and '"result"' in res.stdout, res.stderr[-2000:]
    line = next((x for x in res.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line, res.stderr[-2000:]
    modules = json.loads(line[len("MODULES "):])
    http_or_client = sorted(m for m in modules if m.split(".")[0] in ("uvicorn", "httpx", "httpx2")
                            or m.startswith(("mcp.client", "mcp.server.mcpserver")))
    assert not http_or_client, http_or_client
    assert "mcp.server.stdio" in modules  # it did serve through the SDK


def test_version_answers_without_the_cli_framework(zap):
    """#32: `--version` prints what typer's eager option prints, importing
    no CLI framework (typer made it twice `poll`'s time)."""
    site = sysconfig.get_paths()["purelib"]
    res = subprocess.run([sys.executable, "-S", "-c", PROBE, str(REPO), site, "--version"],
                         env=zap.env, cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    from zapcli import __version__

    assert res.stdout == f"zapcli {__version__}\n"
    line = next(x for x in res.stderr.splitlines() if x.startswith("MODULES "))
    modules = json.loads(line[len("MODULES "):])
    assert not {m.split(".")[0] for m in modules} & HEAVY, modules
    assert len(modules) <= 32, modules  # measured 28, the probe's own json included


def test_help_to_a_pipe_is_typers_text_without_the_cli_framework(zap):
    """#32: `--help` read through a pipe (scripts, models) prints the text
    typer renders there, stored at generation time, importing no CLI
    framework (typer and rich made it ~15x a bare start); a terminal width
    asked for still goes to typer."""
    from zapcli.cli import helptext

    site = sysconfig.get_paths()["purelib"]
    env = {k: v for k, v in zap.env.items() if k not in helptext.LAYOUT_ENV}
    for flag in ("--help", "-h"):
        res = subprocess.run([sys.executable, "-S", "-c", PROBE, str(REPO), site, flag],
                             env=env, cwd=zap.cwd, capture_output=True, text=True, timeout=60)
        assert res.stdout == helptext.render(), res.stderr[-2000:]  # typer's text, as it is now
        line = next(x for x in res.stderr.splitlines() if x.startswith("MODULES "))
        modules = json.loads(line[len("MODULES "):])
        assert not {m.split(".")[0] for m in modules} & HEAVY, modules
        assert len(modules) <= 40, modules  # measured 35, the probe's own json included
    wide = subprocess.run([sys.executable, "-m", "zapcli", "--help"], env={**env, "COLUMNS": "120"},
                          cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    assert wide.returncode == 0 and max(len(x) for x in wide.stdout.splitlines()) == 120


def test_a_runner_of_a_user_with_no_zapcli_folders_set_is_told_them(zap, tmp_path):
    """With neither ZAPCLI_HOME nor ZAPCLI_CONFIG_HOME set (a person's own
    shell), `spawn` works the platform's folders out once and names them in
    its runner's environment: the runner does not import `platformdirs`
    again (~1.5 MB of a `sh` runner's RSS, ~16 ms), and its work — the
    command and a zapcli it runs — sees the same folders. A `sh` runner
    imports no `json` (nor the `re` it brings) either."""
    home = tmp_path / "user"
    home.mkdir()
    env = {k: v for k, v in zap.env.items() if k not in ("ZAPCLI_HOME", "ZAPCLI_CONFIG_HOME")}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "cfg"),
               PYTHONPROFILEIMPORTTIME="1")
    run = lambda *a: subprocess.run([sys.executable, "-m", "zapcli", *a], env=env,  # noqa: E731
                                    cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    sid = run("spawn", "--cli", "sh", "--", "echo HOME=$ZAPCLI_HOME CONFIG=$ZAPCLI_CONFIG_HOME").stdout.strip()
    assert run("wait", sid).returncode == 0
    said = run("output", sid).stdout
    assert f"HOME={home / 'state' / 'zapcli'} CONFIG={home / 'cfg' / 'zapcli'}" in said, said
    imported = (home / "state" / "zapcli" / "subagents" / f"{sid}.err").read_text()
    assert "zapcli.runner.main" in imported  # the runner's own -X importtime lines
    modules = {x.rsplit("|", 1)[1].strip() for x in imported.splitlines() if x.startswith("import time:")}
    # nor json and re: its trail's last line, empty, was parsed — and the failed parse imported json
    assert not modules & {"platformdirs", "json", "re"}, sorted(modules & {"platformdirs", "json", "re"})
