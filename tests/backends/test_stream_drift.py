"""Stream drift is never a silent success (docs/explanation/rules.md#plugins, issue 17 item 4): the real
pinned CLIs behind a wrapper that renames their event kinds, as a newer CLI
might. When the backend knows none of the events, or fewer than half, the
subagent ends `failed`, naming the CLI's version and the range zapcli was
tested with — even where the parser alone would have called it a success (a
`result` event left as it was). `doctor` shows each CLI's version against
that range."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.backends import clitest as ct
from tests.conftest import agent_cli
from zapcli.testing.server import ScriptedServer

# Runs the real CLI (argv[1]) and renames the `type` of the events it prints:
# every one (DRIFT=all) or all but the terminal ones (DRIFT=most).
WRAPPER = r'''
import json, os, subprocess, sys
real, args = sys.argv[1], sys.argv[2:]
if "--version" in args:
    os.execv(real, [real, *args])
keep = {"all": set(), "most": {"result", "turn.completed", "thread.started"}}[os.environ["DRIFT"]]
proc = subprocess.Popen([real, *args], stdout=subprocess.PIPE)
for line in proc.stdout:
    try:
        event = json.loads(line)
    except ValueError:
        sys.stdout.buffer.write(line)
        continue
    if isinstance(event, dict) and event.get("type") not in keep:
        event["type"] = "v9_" + str(event.get("type"))
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()
sys.exit(proc.wait())
'''
SCRIPTS = {"claude": [{"match": "DRIFT", "turns": [{"text": "All done."}] * 3}],
           "codex": [{"match": "DRIFT", "turns": [{"text": "All done."}] * 3}],
           "pi": [{"match": "DRIFT", "turns": [{"text": "All done."}] * 3}]}
TESTED = {"claude": ">=2.1.328, <2.2", "codex": ">=0.169.0, <0.170", "pi": ">=0.73.1, <0.74"}
VERSION = {"claude": "2.1.328", "codex": "0.169.0", "pi": "0.73.1"}


@pytest.fixture(scope="module")
def servers():
    srvs = {cli: ScriptedServer(script, protocol=ct.PROTOCOL[cli]) for cli, script in SCRIPTS.items()}
    for s in srvs.values():
        s.start()
    yield srvs
    for s in srvs.values():
        s.stop()


def _drifting(zap, tmp_path: Path, cli: str) -> None:
    wrapper = tmp_path / f"drift-{cli}"
    wrapper.write_text(f"#!{sys.executable}\n{WRAPPER}", encoding="utf-8")
    wrapper.chmod(0o755)
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(json.dumps({"backends": {cli: {
        "command": [str(wrapper), str(agent_cli(cli))]}}}))


@pytest.mark.parametrize("cli,drift", [("claude", "all"), ("claude", "most"), ("codex", "most"),
                                       ("pi", "all")])
def test_a_drifted_stream_is_failed_naming_the_version_and_the_tested_range(zap, servers, tmp_path,
                                                                            cli, drift):
    _drifting(zap, tmp_path, cli)
    env = {**ct.cli_env(cli, servers[cli]), "DRIFT": drift}
    sid = ct.spawn(zap, cli, "DRIFT please", env, "--approval", "full", "--timeout", "120")
    assert zap("wait", sid, "--timeout", "150").returncode == 3, ct.dump(zap, sid)
    view = zap.json("poll", "--no-wait", sid)["subagents"][0]
    reason = view["reason"]
    assert view["status"] == "failed" and reason.startswith("stream drift"), view
    assert VERSION[cli] in reason and TESTED[cli] in reason, reason
    assert "v9_" in reason  # the kinds it did not know are named


def test_the_real_streams_are_no_drift(zap, servers, tmp_path):
    """The same runs without the renaming complete: the kinds each parser
    knows cover what the pinned CLIs print."""
    for cli in SCRIPTS:
        ct.configure(zap, cli)
        sid = ct.spawn(zap, cli, "DRIFT not now", ct.cli_env(cli, servers[cli]),
                       "--approval", "full")
        assert zap("wait", sid, "--timeout", "120").returncode == 0, ct.dump(zap, sid)


def test_doctor_shows_each_version_against_the_tested_range(zap, tmp_path):
    stale = tmp_path / "claude-next"
    stale.write_text(f"#!{sys.executable}\nprint('3.0.0 (Claude Code)')\n")
    stale.chmod(0o755)
    fine = tmp_path / "codex-now"
    fine.write_text(f"#!{sys.executable}\nprint('codex-cli 0.169.4')\n")
    fine.chmod(0o755)
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(json.dumps({"backends": {
        "claude": {"command": str(stale)}, "codex": {"command": str(fine)}}}))
    doc = zap.json("doctor", env={"PATH": "/usr/bin:/bin"})
    check = next(c for c in doc["checks"] if c["name"] == "backends")
    lines = {line.split(":")[0]: line for line in check["problems"]}
    assert "not the versions zapcli was tested with (>=2.1.328, <2.2)" in lines["claude"], lines
    assert "in the tested range >=0.169.0, <0.170" in lines["codex"], lines
    assert check["warning"] and "1 not of a tested version" in check["detail"], check
