"""The smoke suite of the declared minimum versions: `make lowest` installs
every direct dependency at the lowest version pyproject.toml allows
(`uv pip install --resolution lowest-direct`) in a virtual environment of its
own and runs this file there; `make test` runs it with today's versions.

Each test drives the real CLI through one dependency's part of the work:
typer and rich (help and version of every command), psutil and orjson (a
shell subagent's whole life), inotify_simple (`wait` woken by the trail),
openai, PyYAML, jsonschema, filelock and genai-prices (a built-in agent from a
workspace definition, with memory, an output schema and a dollar budget),
the mcp SDK (`mcp serve` on stdio, driven by the SDK's own client) and
platformdirs (the default state folder).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zapcli.cli import gen


def test_version_and_the_help_of_every_command(zap):
    assert zap("--version", check=True).out.startswith("zapcli ")
    assert "spawn" in zap("--help", check=True).out
    from typer.testing import CliRunner

    from zapcli.cli.app import app

    names = [*gen.commands(), *(f"{g} {s}" for g, subs in gen.groups().items() for s in subs)]
    runner = CliRunner()
    for name in names:  # in this process: typer, click and rich render each
        res = runner.invoke(app, [*name.split(), "--help"], prog_name="zapcli")
        assert res.exit_code == 0 and "Usage:" in res.output, (name, res.output)


def test_a_shell_subagents_whole_life(zap):
    sid = zap.spawn_sh("sleep 0.3; echo smoke-out")
    waited = zap("wait", sid, "--timeout", "30")
    assert waited.returncode == 0, waited.err
    assert zap.json("poll", sid)["subagents"][0]["status"] == "completed"
    assert "smoke-out" in zap("output", sid, check=True).out
    assert "smoke-out" in zap("replay", sid, check=True).out
    assert sid[-8:] in zap("list", "--all", check=True).out
    sleeper = zap.spawn_sh("sleep 60")
    zap("kill", sleeper, "--grace", "1", check=True)
    assert zap.wait_status(sleeper) == "cancelled"


def test_wait_is_woken_by_the_trail(zap):
    """inotify_simple: `wait --any` returns when the first of two ends, long
    before the other (which is killed afterwards)."""
    quick = zap.spawn_sh("sleep 0.5")
    slow = zap.spawn_sh("sleep 60")
    res = zap("wait", "--any", quick, slow, "--timeout", "40", "--json")
    assert res.returncode == 0, res.err
    zap("kill", slow, "--grace", "1", check=True)


def test_an_agent_from_a_workspace_definition(zap, model):
    (zap.cwd / ".zapcli" / "subagents").mkdir(parents=True)
    (zap.cwd / ".zapcli" / "subagents" / "noter.yml").write_text(
        "name: noter\ndescription: Writes a note and answers in JSON.\n"
        "tools: [glob]\nmemory: private\n", encoding="utf-8")
    zap("trust", check=True)  # a workspace definition takes effect once its person trusts the folder
    (zap.cwd / "data.txt").write_text("x\n", encoding="utf-8")
    model([{"match": "SMOKE", "turns": [
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}},
                        {"name": "memory_write", "arguments": {"text": "smoke ran"}}]},
        {"text": '{"files": 1}', "usage": {"prompt_tokens": 100, "completion_tokens": 10}}]}])
    zap.env["ZAPCLI_MODEL"] = "gpt-4o-mini"  # a model genai-prices knows
    schema = '{"type": "object", "required": ["files"], "properties": {"files": {"type": "integer"}}}'
    sid = zap("spawn", "--agent", "noter", "--max-cost", "1", "--approval", "full",
              "--output-schema", schema, "SMOKE count the files", check=True).out.strip()
    assert zap("wait", sid, "--timeout", "60").returncode == 0, zap("replay", sid).out
    polled = zap.json("poll", sid)["subagents"][0]
    assert polled["structured"] == {"files": 1}, polled
    memory = zap.cwd / ".zapcli" / "agent-memory" / "noter"
    assert "smoke ran" in "".join(p.read_text() for p in memory.rglob("*.md"))
    total = zap.json("usage")["sessions"][0]["total"]
    assert total["calls"] == 2 and total["cost_usd"] > 0, total  # priced by genai-prices


def test_mcp_serve_over_stdio_with_the_sdks_client(zap):
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "zapcli", "mcp", "serve"],
                                   env=zap.env, cwd=str(zap.cwd))

    async def go():  # the client API every mcp 2.x has (`mcp.Client(params)` came later)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            names = [t.name for t in (await client.list_tools()).tools]
            spawned = await client.call_tool("spawn", {"task": "echo via-mcp", "cli": "sh"})
            sid = spawned.structured_content["id"]
            waited = await client.call_tool("wait", {"ids": [sid], "timeout": 30})
            return names, waited

    names, waited = anyio.run(go)
    assert {"spawn", "poll", "wait", "kill"} <= set(names)
    assert not waited.is_error and "via-mcp" in waited.content[0].text


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG default is Linux's")
def test_the_default_state_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZAPCLI_", "XDG_"))}
    env.update(HOME=str(tmp_path), ZAPCLI_SESSION="smoke-default")
    res = subprocess.run([sys.executable, "-m", "zapcli", "spawn", "--cli", "sh", "--", "true"],
                         env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    sid = res.stdout.strip()
    assert (tmp_path / ".local" / "state" / "zapcli" / "subagents" / f"{sid}.jsonl").is_file()
    subprocess.run([sys.executable, "-m", "zapcli", "wait", sid], env=env, timeout=60,
                   capture_output=True, cwd=tmp_path)
