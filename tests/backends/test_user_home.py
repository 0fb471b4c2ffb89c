"""C24 (CASES-3) and issue 24 item 8: no agent CLI writes outside its private
config home. Every test of this folder checks the user's home after it
(conftest.py); these two go where the others do not: ten Claude Code
subagents at once (the field case: parallel sessions truncated the user's
~/.claude.json), and `doctor` asking every installed CLI its version for the
first time (`codex --version` alone makes helper folders under ~/.codex)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.backends import clitest as ct
from tests.conftest import agent_cli
from zapcli.testing.server import ScriptedServer

PARALLEL = 10


def test_c24_ten_parallel_claude_subagents_leave_the_users_config_byte_identical(
        zap, tmp_path, user_home):
    claude_json = (user_home.path / ".claude.json").read_bytes()
    script = [{"match": f"C24-{n} ", "turns": [{"text": f"answer {n}"}]} for n in range(PARALLEL)]
    with ScriptedServer(script, protocol="anthropic") as srv:
        ct.configure(zap, "claude")
        env = ct.cli_env("claude", srv)
        # the default approval mode: each claude also starts zapcli's approval MCP server,
        # whose logs Claude Code keeps in its cache folder
        ids = [ct.spawn(zap, "claude", f"C24-{n} go", env) for n in range(PARALLEL)]
        assert zap("wait", *ids, "--timeout", "240", timeout=300).returncode == 0, \
            [ct.dump(zap, i) for i in ids]
    for n, sid in enumerate(ids):
        assert ct.records(zap, sid, "report")[-1]["text"].strip() == f"answer {n}"
        assert (ct.home(zap, sid) / ".claude.json").exists()  # its own, in its private home
    assert (user_home.path / ".claude.json").read_bytes() == claude_json
    # and nothing else anywhere under the home: the fixture's check after the test


def test_doctor_asking_each_cli_its_version_writes_nothing_under_home(zap, user_home):
    clis = ("claude", "codex", "gemini", "opencode", "qwen", "pi")
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(json.dumps({"backends": {
        cli: {"command": str(agent_cli(cli))} for cli in clis}}))
    doc = zap.json("doctor", timeout=120)  # a fresh state folder: no version cached yet
    check = next(c for c in doc["checks"] if c["name"] == "backends")
    lines = {line.split(":")[0]: line for line in check["problems"]}
    for cli in clis:
        assert "in the tested range" in lines[cli], lines
