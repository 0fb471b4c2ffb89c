"""`zapcli tool-schema --format openai|responses|anthropic|mcp` prints the
shape each framework takes (#31.5): each is accepted by that framework's
own SDK type, its parameters are a valid JSON Schema that keeps OpenAI's
strict-mode rules where strict is claimed, and — for the three model APIs —
it goes through the real SDK to a scripted model server, the model's call
comes back, and its arguments, handed to `zapcli call` as they are, start
the subagent."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from zapcli.testing import ScriptedServer

CALL = {"action": "spawn", "task": "echo from-the-model", "cli": "sh"}


def printed(zap, fmt: str) -> dict:
    res = zap("tool-schema", "--format", fmt)
    assert res.returncode == 0, res.err
    return json.loads(res.stdout)


def strict_ok(schema: dict) -> None:
    """OpenAI strict mode: every object lists all its properties as required
    and allows no others."""
    if schema.get("type") == "object" or "properties" in schema:
        assert schema.get("additionalProperties") is False
        assert set(schema["required"]) == set(schema["properties"])
        for prop in schema["properties"].values():
            strict_ok(prop)


def test_each_format_is_the_sdks_own_type(zap):
    from anthropic.types import ToolParam
    from mcp.types import Tool
    from openai.types.chat import ChatCompletionFunctionTool
    from openai.types.responses import FunctionTool
    from pydantic import TypeAdapter

    chat = ChatCompletionFunctionTool.model_validate(printed(zap, "openai"))
    assert chat.function.name == "subagent" and chat.function.strict
    strict_ok(chat.function.parameters)
    resp = FunctionTool.model_validate(printed(zap, "responses"))
    assert resp.name == "subagent" and resp.strict
    strict_ok(resp.parameters)
    anth = TypeAdapter(ToolParam).validate_python(printed(zap, "anthropic"))
    assert anth["name"] == "subagent" and anth["input_schema"]["type"] == "object"
    mcp_tool = Tool.model_validate(printed(zap, "mcp"))
    assert mcp_tool.name == "subagent" and mcp_tool.input_schema["required"] == ["action"]
    # every key was understood: what the SDK types hold is what was printed
    assert mcp_tool.model_dump(by_alias=True, exclude_none=True) == printed(zap, "mcp")
    assert chat.model_dump(exclude_none=True) == printed(zap, "openai")
    assert resp.model_dump(exclude_none=True) == printed(zap, "responses")
    assert anth == printed(zap, "anthropic")
    for schema in (chat.function.parameters, resp.parameters, anth["input_schema"],
                   mcp_tool.input_schema):
        Draft202012Validator.check_schema(schema)
        assert Draft202012Validator(schema).is_valid(
            {**{k: None for k in schema["required"]}, **CALL}) or schema is mcp_tool.input_schema
    assert Draft202012Validator(mcp_tool.input_schema).is_valid(CALL)  # optional ones left out


def test_the_default_is_openai_and_a_bad_format_is_refused(zap):
    assert printed(zap, "openai") == json.loads(zap("tool-schema").stdout)
    bad = zap("tool-schema", "--format", "langchain")
    assert bad.returncode == 2 and "choose one of: openai, responses, anthropic, mcp" in bad.err
    assert bad.stdout == b""


def _run_call(zap, arguments: dict) -> str:
    res = zap("call", json.dumps(arguments), "--json")
    assert res.returncode == 0, res.out + res.err
    sid = json.loads(res.stdout)["id"]
    assert zap("wait", sid, "--timeout", "30").returncode == 0
    return zap("output", sid).out


@pytest.mark.parametrize("fmt, protocol", [("openai", "chat"), ("responses", "responses"),
                                           ("anthropic", "anthropic")])
def test_a_model_calls_it_through_the_real_sdk_and_zapcli_call_runs_it(zap, fmt, protocol):
    tool = printed(zap, fmt)
    params = tool.get("function", tool).get("parameters") or tool.get("input_schema")
    arguments = {**{k: None for k in params["required"]}, **CALL}
    script = [{"turns": [{"tool_calls": [{"name": "subagent", "arguments": arguments}]}]}]
    with ScriptedServer(script, protocol=protocol) as srv:
        if protocol == "anthropic":
            import anthropic

            client = anthropic.Anthropic(base_url=srv.base_url, api_key="sk-ant-test-1")
            msg = client.messages.create(model="scripted", max_tokens=256, tools=[tool],
                                         messages=[{"role": "user", "content": "start it"}])
            got = next(b.input for b in msg.content if b.type == "tool_use")
        else:
            import openai

            client = openai.OpenAI(base_url=srv.base_url, api_key="sk-test-1")
            if protocol == "chat":
                out = client.chat.completions.create(
                    model="scripted", tools=[tool], messages=[{"role": "user", "content": "go"}])
                got = json.loads(out.choices[0].message.tool_calls[0].function.arguments)
            else:
                out = client.responses.create(model="scripted", tools=[tool], input="go")
                call = next(i for i in out.output if i.type == "function_call")
                got = json.loads(call.arguments)
        sent = srv.requests[-1]["tools"][0]
    assert sent == tool  # the SDK sent it as printed
    Draft202012Validator(params).validate(got)
    assert _run_call(zap, got) == "from-the-model\n"


def test_a_call_without_an_action_says_it_is_missing(zap):
    """`zapcli call '{}'` said "unknown action None" (a new user's trial)."""
    res = zap("call", "{}")
    assert res.returncode == 2 and "`action` is missing; give one of: spawn" in res.out + res.err
    assert "None" not in res.out + res.err


def test_an_unknown_action_is_named_as_sent(zap):
    """It said `unknown action the string "bogus"` (a new user's trial)."""
    res = zap("call", '{"action": "bogus"}')
    said = res.out + res.err
    assert res.returncode == 2 and 'unknown action "bogus"; use one of: spawn' in said, said
    res = zap("call", '{"action": 3}')
    assert "unknown action (the integer 3)" in res.out + res.err
