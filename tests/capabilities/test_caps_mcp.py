"""The scoped MCP gateway (docs/explanation/rules.md#undeclared-means-unreachable) against a real stdio server built with the SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zapcli.agent.types import ToolContext
from zapcli.capabilities import Grant, assemble_prompt, build_grant, open_tools

SERVER = str(Path(__file__).parent / "fixtures" / "mcp_server.py")


def ctx(ws: Path) -> ToolContext:
    return ToolContext(str(ws), str(ws))


def wait_until(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


class RecordingApprover:
    """Decides like the `workspace` mode (allowlisted runs, the rest asks) unless
    `confirm`; records what it had to ask a person about."""

    def __init__(self, answer: bool, confirm: bool = False):
        self.answer, self.confirm = answer, confirm
        self.asked: list[tuple[str, str]] = []
        self.seen: list[dict] = []

    def check(self, tool: str, args: dict, *, allowlisted: bool | None = None):
        from zapcli.approvals import Decision

        self.seen.append({**args, "allowlisted": allowlisted})
        if allowlisted and not self.confirm:
            return Decision("allow", "", "allowlisted")
        return Decision("ask", "", "a person decides")

    def ask(self, tool: str, verdict, args: dict) -> tuple[bool, str]:
        self.asked.append((tool, verdict.summary))
        return self.answer, "the user said so"


@pytest.fixture
def mcp_json(ws: Path, tmp_path: Path) -> Path:
    path = ws / ".zapcli" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    marker = tmp_path / "other-started"
    path.write_text(json.dumps({"mcpServers": {
        "test": {"command": sys.executable, "args": [SERVER], "allow": ["echo"],
                 "env": {"MCP_TEST_PIDFILE": str(tmp_path / "pid")}},
        "other": {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]},
        "broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
        "missing": {"command": str(tmp_path / "no-such-program")},
    }}))
    return path


@pytest.fixture
def opened(ws: Path, mcp_json: Path, define):
    made = []

    def _open(servers: str, approver=None):
        grant = build_grant(define(f"mcp: {{servers: [{servers}]}}\n"), ws)
        tools = open_tools(grant, approver=approver, mcp_start_timeout=30)
        made.append(tools)
        return grant, tools, {t.spec.name: t for t in tools.tools}

    yield _open
    for tools in made:
        tools.close()


def test_declared_but_unconfigured_still_mounts_with_a_diagnostic(ws: Path, mcp_json: Path,
                                                                 define) -> None:
    definition = define("mcp: {servers: [test, ghost]}\n")
    grant = build_grant(definition, ws)
    assert grant.tool_names() == ["mcp_search", "mcp_describe", "mcp_call"]
    assert [d["name"] for d in grant.diagnostics] == ["ghost"]
    message = grant.diagnostics[0]["message"]
    assert "not configured" in message and str(mcp_json) in message and '"ghost"' in message
    prompt = assemble_prompt(definition, grant)
    assert "- test\n- ghost (not configured)" in prompt


def test_search_describe_call_on_a_real_server(ws: Path, opened) -> None:
    approver = RecordingApprover(answer=True)
    _, tools, by = opened("test, ghost", approver)
    assert tools.diagnostics == []
    listing = by["mcp_search"].run({}, ctx(ws)).content
    assert "test/echo: Echo the text back." in listing and "[ghost: not configured]" in listing
    assert "other" not in listing
    found = by["mcp_search"].run({"query": "integers"}, ctx(ws)).content.splitlines()
    assert found == ["test/add: Add two integers.", "[ghost: not configured]"]
    described = json.loads(by["mcp_describe"].run({"server": "test", "tool": "add"}, ctx(ws)).content)
    assert described["input_schema"]["required"] == ["a", "b"]
    assert described["approval"] == "asks for approval"
    echo = by["mcp_call"].run({"server": "test", "tool": "echo", "arguments": {"text": "hi"}}, ctx(ws))
    assert echo.ok and echo.content == "echo: hi"
    assert approver.asked == []  # allowlisted: runs without asking a person
    assert approver.seen[-1] == {"server": "test", "tool": "echo", "arguments": {"text": "hi"},
                                 "allowlisted": True}
    added = by["mcp_call"].run({"server": "test", "tool": "add", "arguments": {"a": 2, "b": 3}},
                               ctx(ws))
    assert added.ok and added.content == "5"
    assert approver.asked == [("mcp_call", 'MCP test/add {"a": 2, "b": 3}')]


def test_off_allowlist_denied(ws: Path, opened) -> None:
    approver = RecordingApprover(answer=False)
    _, _, by = opened("test", approver)
    result = by["mcp_call"].run({"server": "test", "tool": "delete_everything",
                                 "arguments": {"confirm": True}}, ctx(ws))
    assert not result.ok and result.content == "denied: the user said so"
    assert by["mcp_call"].needs_approval({"server": "test", "tool": "delete_everything"})
    assert not by["mcp_call"].needs_approval({"server": "test", "tool": "echo"})


def test_confirm_mode_asks_even_for_allowlisted_tools(ws: Path, opened) -> None:
    approver = RecordingApprover(answer=False, confirm=True)
    _, _, by = opened("test", approver)
    result = by["mcp_call"].run({"server": "test", "tool": "echo", "arguments": {"text": "x"}},
                                ctx(ws))
    assert not result.ok and approver.asked == [("mcp_call", 'MCP test/echo {"text": "x"}')]


def test_without_approver_allowlisted_runs_and_the_rest_is_not_run(ws: Path, opened) -> None:
    _, _, by = opened("test")
    echo = by["mcp_call"].run({"server": "test", "tool": "echo", "arguments": {"text": "y"}},
                              ctx(ws))
    assert echo.ok and echo.content == "echo: y"


def test_no_approver_means_not_run(ws: Path, opened) -> None:
    _, _, by = opened("test")
    result = by["mcp_call"].run({"server": "test", "tool": "add", "arguments": {"a": 1, "b": 1}},
                                ctx(ws))
    assert not result.ok and "needs approval" in result.content and "not run" in result.content


def test_undeclared_server_is_refused_at_once(ws: Path, tmp_path: Path, opened) -> None:
    grant, tools, by = opened("test")
    result = by["mcp_call"].run({"server": "other", "tool": "x"}, ctx(ws))
    assert not result.ok
    assert result.content == ("MCP server 'other' is not available to this subagent; "
                              "it may use: test")
    assert "other" not in tools.gateway.status
    assert not (tmp_path / "other-started").exists()  # never started
    described = by["mcp_describe"].run({"server": "other", "tool": "x"}, ctx(ws))
    assert not described.ok and "it may use: test" in described.content
    assert not by["mcp_search"].run({"server": "other"}, ctx(ws)).ok


def test_server_that_fails_to_start_is_a_diagnostic(ws: Path, opened) -> None:
    _, tools, by = opened("test, broken, missing")
    names = [d["name"] for d in tools.diagnostics]
    assert names == ["broken", "missing"]
    assert all("did not start" in d["message"] for d in tools.diagnostics)
    assert "mcp.json" in tools.diagnostics[0]["message"]
    assert tools.gateway.status["test"] == "running"
    result = by["mcp_call"].run({"server": "broken", "tool": "x"}, ctx(ws))
    assert not result.ok and "MCP server 'broken' cannot be used: failed:" in result.content
    assert "[broken: failed:" in by["mcp_search"].run({}, ctx(ws)).content


def test_unknown_tool_on_declared_server(ws: Path, opened) -> None:
    _, _, by = opened("test")
    result = by["mcp_call"].run({"server": "test", "tool": "nope"}, ctx(ws))
    assert not result.ok and "has no tool 'nope'" in result.content


def test_close_stops_the_server(ws: Path, tmp_path: Path, opened) -> None:
    _, tools, _ = opened("test")
    pid = int((tmp_path / "pid").read_text())
    os.kill(pid, 0)
    tools.close()

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    assert wait_until(gone)


def test_grant_freezes_without_literal_secrets(ws: Path, define) -> None:
    path = ws / ".zapcli" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"gh": {
        "command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_literal_secret_value",
                                     "API_KEY": "${MY_KEY}", "REGION": "eu"}}}}))
    grant = build_grant(define("mcp: {servers: [gh]}\n"), ws)
    frozen = json.dumps(grant.to_dict())
    assert "ghp_literal_secret_value" not in frozen and "${MY_KEY}" in frozen
    thawed = Grant.from_dict(json.loads(frozen))
    assert thawed.mcp_configs["gh"].env == {"GITHUB_TOKEN": "ghp_literal_secret_value",
                                            "API_KEY": "${MY_KEY}", "REGION": "eu"}


def test_bad_mcp_json_is_a_diagnostic(ws: Path, isolated: Path, define) -> None:
    (isolated / "config" / "mcp.json").write_text("{not json")
    grant = build_grant(define("mcp: {servers: [x]}\n"), ws)
    messages = " | ".join(d["message"] for d in grant.diagnostics)
    assert "invalid JSON" in messages and "not configured" in messages


def test_parent_side_never_imports_mcp_or_the_loop(ws: Path, mcp_json: Path) -> None:
    code = ("import sys; from pathlib import Path\n"
            "from zapcli.definitions import parse_definition\n"
            "from zapcli.capabilities import build_grant, assemble_prompt\n"
            "d, _ = parse_definition('name: a\\ndescription: b\\nmcp: {servers: [test]}\\n', 'a')\n"
            f"g = build_grant(d, Path({str(ws)!r})); assemble_prompt(d, g)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'openai')\n"
            "             or m.startswith(('zapcli.agent.loop', 'zapcli.providers'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ})
    assert out.stdout.strip() == "[]"
