"""tool-schema, call, the `subagent` tool of `zapcli run` and the MCP tools are
generated from one declaration: they agree on every action and parameter,
and the declaration describes nothing the CLI lacks."""

from __future__ import annotations

import json
import re
from pathlib import Path

from zapcli.toolapi.dispatch import check
from zapcli.toolapi.schema import action_schema, offered, tool_schema
from zapcli.toolapi.spec import ACTIONS, BY_NAME, RUN_ACTIONS

SAMPLE = {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "array": ["x"]}


def _mcp_tools():
    from zapcli.mcpserver.tools import TOOLS

    return {t.name: t for t in TOOLS}


def test_tool_schema_command_prints_the_generated_schema(zap):
    assert json.loads(zap("tool-schema", check=True).out) == tool_schema()


def test_every_surface_has_the_same_actions_and_parameters():
    from zapcli.cli.subagent_tool import SubagentTool

    combined = tool_schema()["function"]["parameters"]["properties"]
    run = SubagentTool.spec.parameters["properties"]
    mcp = _mcp_tools()
    assert combined["action"]["enum"] == [a.name for a in ACTIONS] == list(mcp)
    assert run["action"]["enum"] == [a.name for a in RUN_ACTIONS]
    for a in ACTIONS:
        names = [p.name for p in a.params]
        assert list(mcp[a.name].input_schema["properties"]) == names
        assert mcp[a.name].input_schema == action_schema(a)
        # MCP: plain types, and only what the action cannot do without is required
        assert mcp[a.name].input_schema["required"] == [p.name for p in a.params if p.required]
        assert all("null" not in str(mcp[a.name].input_schema["properties"][n]["type"])
                   for n in names)
        for p in a.params:
            assert combined[p.name]["type"] == [p.type, "null"]  # one type for every action
            assert f"{a.name}: " in combined[p.name]["description"]
        if a.in_run:
            assert all(p.name in run and run[p.name]["type"] == [p.type, "null"]
                       for p in offered(a, run=True))
        # `call` takes every parameter the schema offers
        action, checked = check(a.name, {p.name: (p.enum[0] if p.enum else SAMPLE[p.type])
                                         for p in a.params})
        assert action is a and all(checked[n] is not None for n in names)
    assert set(combined) - {"action"} == {p.name for a in ACTIONS for p in a.params}


def test_the_declaration_describes_nothing_the_cli_lacks():
    from zapcli.cli.gen import argspec

    spec = argspec(with_groups=True)
    for a in ACTIONS:
        cli = spec[a.command]["defaults"]
        for p in a.params:
            if p.cli == "":  # tool-only, said in its description
                # agents' name (the CLI's `agents show`); spawn's fork (a run's conversation)
                assert (a.name, p.name) in {("agents", "name"), ("spawn", "fork")}, (a.name, p.name)
                assert a.name != "agents" or "agents show" in spec
                continue
            assert (p.cli or p.name) in cli, f"{a.name}.{p.name} is not a parameter of zapcli {a.command}"
    # `wait` without ids is one thing everywhere (the CLI's `zapcli wait` takes no ids too)
    wait_ids = BY_NAME["wait"].param("ids")
    assert wait_ids is not None and not wait_ids.required and "omit" in wait_ids.description
    assert spec["wait"]["args"][0][3] is False  # (dest, kind, nargs, required)


def test_every_action_a_result_points_to_exists():
    """Hints in tool results name tool actions (`action output`), never a
    command the tool lacks; the run surface never tells its model to approve."""
    from zapcli.render.text import alt, spell

    root = Path(__file__).resolve().parents[2] / "zapcli" / "render"
    sources = "".join(p.read_text() for p in root.glob("*.py"))
    pointed = set(re.findall(r"action (\w+)", sources))
    assert pointed and pointed <= set(BY_NAME), pointed - set(BY_NAME)
    text = alt("zapcli approve X r1", "action approve or deny", "the person running zapcli is asked")
    assert spell(text, "cli") == "zapcli approve X r1"
    assert spell(text, "tool") == "action approve or deny"
    assert "approve" not in spell(text, "run")


def test_mcp_serve_help_names_the_tools_the_server_lists():
    """A new user's finding: the help named 14 tools, the server lists 18."""
    from zapcli.cli.groups import mcp_serve

    said = (mcp_serve.__doc__ or "").split("The tools: ", 1)[1].split(". ", 1)[0]
    assert said.split(", ") == list(_mcp_tools())


def test_a_timed_out_wait_through_call_says_how_long_it_waited(zap):
    """A new user's finding: "wait timed out after 1.0s" then "1/1 still
    running (waited 0.0s)" — the look after the wait said its own time."""
    spawned = zap("call", json.dumps({"action": "spawn", "task": "sleep 30", "cli": "sh"}), check=True).out
    sid = re.findall(r"sa_\d{8}_[0-9a-f]{8}", spawned)[0]
    try:
        done = zap("call", json.dumps({"action": "wait", "ids": [sid], "timeout": 1}))
        assert done.returncode == 4, done.out
        waited = re.search(r"still running \(waited (\S+?)s\)", done.out)
        assert waited and float(waited.group(1)) >= 1.0, done.out
    finally:
        zap("kill", sid)


def test_call_and_mcp_errors_name_the_tools_parameters_never_cli_flags_or_python_reprs(zap):
    """A new user's trial: errors worded for the CLI (`--approval`, `--cli
    sh`, `--worktree`) and Python's words (`str '3'`) reached a model that
    has no such flags or types. Through `zapcli call` and the MCP server
    alike they name the parameters and say JSON's types; the CLI keeps its flags."""
    from mcp import Client

    from tests.mcp.conftest import run, server_params, text

    sh = zap.spawn_sh("true")
    zap.wait_status(sh)
    calls = [({"action": "spawn", "task": "true", "cli": "sh", "approval": "full", "model": "m"},
              ["`approval`", "`model`", '`cli: "sh"`']),
             ({"action": "diff", "id": sh}, ["spawned with `worktree` or `attempts`"]),
             ({"action": "attempts", "id": sh}, ["not spawned with `attempts`"]),
             ({"action": "poll", "ids": [sh], "wait_secs": "3"},
              ['`wait_secs` of poll must be an integer, got the string "3"'])]

    async def over_mcp():
        async with Client(server_params(zap)) as c:
            return [text(await c.call_tool(doc["action"], {k: v for k, v in doc.items()
                                                            if k != "action"}))
                    for doc, _ in calls]

    for (doc, words), mcp in zip(calls, run(over_mcp), strict=True):
        called = zap("call", json.dumps(doc))
        assert called.returncode != 0, called.out
        for said in (called.out, mcp):
            assert all(w in said for w in words), (said, words)
            assert not re.search(r"(?<![\w-])--[a-z]", said), said
            assert " str " not in said and "'3'" not in said, said
    cli = zap("spawn", "--cli", "sh", "--approval", "full", "--", "true")
    assert "--approval" in cli.err and "--cli sh" in cli.err, cli.err  # the CLI's own words


def test_the_flags_a_tool_reads_as_parameters_are_the_declarations_options():
    """`errors.TOOL_FLAGS` (how a message worded for the CLI names a parameter
    to a tool caller) is every option of the declaration, nothing else."""
    from zapcli.errors import TOOL_FLAGS

    positional = {"id", "ids", "name", "req", "task", "text"}  # arguments, not flags, on the CLI
    options = {p.name.replace("_", "-") for a in ACTIONS for p in a.params
               if p.cli is None and p.name not in positional}
    assert options == TOOL_FLAGS
