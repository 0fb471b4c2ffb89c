"""The scripted server's Responses protocol is the real one: the official
`openai` SDK streams and parses it unmodified; faults arrive as the SDK sees
them from the real API; the conversation key survives context before the task."""

from __future__ import annotations

import json

import openai
import pytest

from zapcli.testing import ScriptedServer
from zapcli.testing.responses import conversation_key


def sdk(srv: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0)


def msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


TURN = {"text": "hello there", "reasoning": "let me think",
        "tool_calls": [{"name": "exec_command", "arguments": {"cmd": "ls"}, "id": "call_1"}],
        "usage": {"prompt_tokens": 70, "completion_tokens": 30, "cached_tokens": 20,
                  "reasoning_tokens": 5}}


def test_sdk_stream_helper_parses_text_reasoning_calls_and_usage():
    with ScriptedServer([{"turns": [TURN]}], protocol="responses") as srv:
        with sdk(srv).responses.stream(model="m", input="q") as stream:
            events = list(stream)
            final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    for k in ("response.output_text.delta", "response.reasoning_summary_text.delta",
              "response.function_call_arguments.delta", "response.function_call_arguments.done"):
        assert k in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output_text == "hello there"
    assert [o.type for o in final.output] == ["reasoning", "message", "function_call"]
    call = final.output[2]
    assert (call.name, call.call_id, json.loads(call.arguments)) == ("exec_command", "call_1",
                                                                     {"cmd": "ls"})
    assert final.output[0].summary[0].text == "let me think"
    u = final.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (70, 30, 100)
    assert u.input_tokens_details.cached_tokens == 20
    assert u.output_tokens_details.reasoning_tokens == 5


def test_sdk_non_streaming_response():
    with ScriptedServer([{"turns": [{"text": "plain"}]}], protocol="responses") as srv:
        resp = sdk(srv).responses.create(model="m", input="q")
    assert resp.status == "completed" and resp.output_text == "plain"
    assert resp.usage is not None and resp.usage.input_tokens >= 1


def test_custom_tool_call_and_namespace():
    turn = {"tool_calls": [{"name": "apply_patch", "arguments": "*** Begin Patch", "custom": True},
                           {"name": "echo", "namespace": "mcp__srv", "arguments": {"t": 1}}]}
    with ScriptedServer([{"turns": [turn]}], protocol="responses") as srv:
        resp = sdk(srv).responses.create(model="m", input="q", stream=True)
        done = [e.item for e in resp if e.type == "response.output_item.done"]
    assert done[0].type == "custom_tool_call" and done[0].input == "*** Begin Patch"
    assert done[1].type == "function_call" and done[1].namespace == "mcp__srv"


def test_error_200_is_response_failed_mid_stream():
    script = [{"turns": [{"error_200": {"message": "model fell over", "code": "server_error"}}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        events = list(sdk(srv).responses.create(model="m", input="q", stream=True))
    assert [e.type for e in events] == ["response.created", "response.in_progress",
                                        "response.failed"]
    assert events[-1].response.error.message == "model fell over"


def test_http_error_then_next_turn():
    script = [{"turns": [{"http_error": {"status": 400, "message": "bad input"}},
                         {"text": "recovered"}]}]
    with ScriptedServer(script, protocol="responses") as srv:
        client = sdk(srv)
        with pytest.raises(openai.BadRequestError, match="bad input"):
            client.responses.create(model="m", input="q")
        assert client.responses.create(model="m", input="q").output_text == "recovered"


def test_aborted_stream_is_an_error_for_the_sdk():
    script = [{"turns": [{"raw": ['event: response.created\ndata: {"type": "response.created", '
                                  '"sequence_number": 0, "response": {"id": "r", "object": '
                                  '"response", "status": "in_progress", "output": []}}\n\n'],
                          "close": "abort"}]}]
    seen: list[str] = []
    with ScriptedServer(script, protocol="responses") as srv:
        with pytest.raises(openai.APIConnectionError):  # the body ended before its last chunk
            for event in sdk(srv).responses.create(model="m", input="q", stream=True):
                seen.append(event.type)
    assert seen == ["response.created"]


def test_models_list():
    with ScriptedServer([], models=["gpt-5.5"], protocol="responses") as srv:
        assert [m.id for m in sdk(srv).models.list()] == ["gpt-5.5"]


def test_context_before_the_task_keeps_the_conversation():
    """Codex's shape: developer messages, an environment block, then the task;
    the next request adds the model's call and its output after them."""
    script = [{"match": "fix the bug", "turns": [{"text": "turn one"}, {"text": "turn two"}]},
              {"turns": [{"text": "other rule"}]}]
    opening = [msg("developer", "You are Codex."), msg("user", "<environment_context>cwd"
                                                            "</environment_context>"),
               msg("user", "please fix the bug")]
    second = opening + [{"type": "function_call", "call_id": "c", "name": "x", "arguments": "{}"},
                        {"type": "function_call_output", "call_id": "c", "output": "ok"},
                        msg("user", "<environment_context>later</environment_context>")]
    assert conversation_key({"input": second, "prompt_cache_key": "t1"}) == (
        "You are Codex.", "<environment_context>cwd</environment_context>\n\n"
        "please fix the bug", "t1")
    with ScriptedServer(script, protocol="responses") as srv:
        c = sdk(srv)
        ask = lambda inp, thread: c.responses.create(  # noqa: E731
            model="m", input=inp, prompt_cache_key=thread).output_text
        assert ask(opening, "t1") == "turn one"
        assert ask(second, "t1") == "turn two"
        assert ask(opening, "t2") == "turn one"  # another thread, same task: its own conversation
        assert ask([msg("user", "something else")], "t3") == "other rule"
