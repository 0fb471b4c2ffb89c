"""The grantable set, tool construction, scrubbed env and the todo list."""

from __future__ import annotations

import pytest

from zapcli.tools.env import scrubbed_env
from zapcli.tools.registry import (
    GRANTABLE,
    Toolset,
    available_tools,
    build_tools,
    canonical_name,
    never_grantable_reason,
)
from zapcli.tools.todo import TodoTool


def test_canonical_names():
    assert canonical_name("webfetch") == "WebFetch"
    assert canonical_name(" BASH ") == "bash"
    assert canonical_name("Task_Output") == "task_output"
    assert canonical_name("ask_user") is None
    assert canonical_name("nope") is None
    assert all(canonical_name(n) == n for n in GRANTABLE)


def test_never_grantable():
    for name in ("AskUserQuestion", "mcp_call", "mcp__github__create_issue", "memory_write",
                 "ExitPlanMode", "agents_save", "subagent"):
        assert never_grantable_reason(name), name
        assert canonical_name(name) is None
    assert never_grantable_reason("bash") is None


def test_available_tools_websearch_only_when_configured():
    assert "WebSearch" not in available_tools()
    assert "WebSearch" in available_tools(search_provider="http://s/?q={query}")
    assert "use_skill" in available_tools()


def test_build_tools_fresh_instances():
    names = ["BASH", "read", "write", "edit", "glob", "grep", "todo", "task_output",
             "task_stop", "webfetch", "use_skill", "read"]
    tools = build_tools(names)
    got = [t.spec.name for t in tools]
    assert got == ["bash", "read", "write", "edit", "glob", "grep", "todo", "task_output",
                   "task_stop", "WebFetch"]
    for tool in tools:  # every spec is a strict, serializable schema
        params = tool.spec.parameters
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
        assert tool.spec.to_openai()["function"]["name"] == tool.spec.name
        assert len(tool.spec.description) > 40
    again = build_tools(["todo"])[0]
    assert again is not [t for t in tools if t.spec.name == "todo"][0]
    with pytest.raises(ValueError, match="not a grantable"):
        build_tools(["ask_user"])
    with pytest.raises(ValueError, match="search provider"):
        build_tools(["WebSearch"])
    ts = Toolset(["WebSearch", "bash", "task_stop"], search_provider=lambda q, n: [])
    assert ts.by_name()["bash"].jobs is ts.by_name()["task_stop"].jobs
    ts.close()


def test_scrubbed_env():
    source = {"PATH": "/bin", "HOME": "/h", "LANG": "C", "LC_ALL": "C", "TERM": "xterm",
              "TMPDIR": "/t", "USER": "u", "SHELL": "/bin/bash", "OPENAI_API_KEY": "sk",
              "GITHUB_TOKEN": "gh", "AWS_SECRET_ACCESS_KEY": "aws", "DB_PASSWORD": "pw",
              "EDITOR": "vim", "MY_VAR": "1", "NPM_TOKEN": "npm", "LC_API_KEY": "x",
              "ANTHROPIC_API_KEY": "ak"}
    env = scrubbed_env(source, [])
    assert env == {"PATH": "/bin", "HOME": "/h", "LANG": "C", "LC_ALL": "C", "TERM": "xterm",
                   "TMPDIR": "/t", "USER": "u", "SHELL": "/bin/bash"}
    env = scrubbed_env(source, ["MY_VAR", "NPM_TOKEN", "OPENAI_API_KEY", "ABSENT"])
    assert env["MY_VAR"] == "1" and env["NPM_TOKEN"] == "npm"
    assert "OPENAI_API_KEY" not in env and "ABSENT" not in env and "GITHUB_TOKEN" not in env
    env = scrubbed_env(source, ["ANTHROPIC_API_KEY"], deny_names=["ANTHROPIC_API_KEY"])
    assert "ANTHROPIC_API_KEY" not in env


def test_todo(ctx):
    todo = TodoTool()
    assert todo.run({"action": "list"}, ctx).content == "the checklist is empty"
    res = todo.run({"action": "set", "items": [
        {"text": "read code", "status": "done"},
        {"text": "write fix", "status": "in_progress"},
        "run tests"]}, ctx)
    assert res.ok
    assert res.content == ("1. [x] read code\n2. [~] write fix\n3. [ ] run tests\n"
                           "(1/3 done)")
    assert todo.run({"action": "list"}, ctx).content == res.content
    bad = todo.run({"action": "set", "items": [{"text": "x", "status": "finished"}]}, ctx)
    assert not bad.ok and "in_progress" in bad.content
    assert todo.run({"action": "list"}, ctx).content == res.content  # unchanged on error
    assert not todo.run({"action": "set"}, ctx).ok
    assert not todo.run({"action": "clear"}, ctx).ok
    assert TodoTool().run({"action": "list"}, ctx).content == "the checklist is empty"
